# registry.k8s.io/coredns/coredns:<version>, built here by deploy/kind/images.sh: CoreDNS
# from tools/kind/coredns, FROM scratch. kubeadm's Deployment passes only args (-conf
# /etc/coredns/Corefile), so the entrypoint is upstream's /coredns. It runs as root (no
# USER): upstream runs it as nonroot with a file capability to bind port 53, which a
# COPY does not carry; kubeadm's pod adds NET_BIND_SERVICE and drops the rest.
FROM scratch
COPY rootfs/ /
ENTRYPOINT ["/coredns"]
