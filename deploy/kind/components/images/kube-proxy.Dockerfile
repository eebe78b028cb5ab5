# registry.k8s.io/kube-proxy:<Kubernetes version>, built here by deploy/kind/images.sh:
# kube-proxy from tools/k8s on a Debian root file system with iptables and conntrack
# (deploy/images/rootfs.sh, passed as BASE), iptables behind iptables-wrapper as in
# upstream's image, so it writes its rules with the node's back end (legacy or nft).
ARG BASE
FROM ${BASE}
COPY rootfs/ /
RUN for c in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do \
      ln -sf iptables-wrapper "/usr/sbin/$c"; done
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ENTRYPOINT ["/usr/local/bin/kube-proxy"]
