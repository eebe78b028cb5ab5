# registry.k8s.io/etcd:<etcd version>-0, built here by deploy/kind/images.sh: etcd from
# tools/kind/etcd (go.etcd.io/etcd/server/v3 from the Go module proxy), FROM scratch as
# upstream's distroless image. kubeadm's static pod runs `etcd` from PATH.
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
ENTRYPOINT ["/usr/local/bin/etcd"]
