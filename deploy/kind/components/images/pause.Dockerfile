# registry.k8s.io/pause:<version>, built here by deploy/kind/images.sh: pause compiled
# statically with gcc from the k8s.io/kubernetes module's build/pause/linux/pause.c, FROM
# scratch with upstream's entrypoint and user.
FROM scratch
COPY rootfs/ /
USER 65535:65535
ENTRYPOINT ["/pause"]
