# registry.k8s.io/kube-controller-manager:<Kubernetes version>, built here by deploy/kind/images.sh: the
# binary from tools/k8s (k8s.io/kubernetes from the Go module proxy) in /usr/local/bin, FROM
# scratch as upstream's distroless image. kubeadm's static pod runs `kube-controller-manager` from PATH.
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
ENTRYPOINT ["/usr/local/bin/kube-controller-manager"]
