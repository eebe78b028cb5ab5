# docker.io/customerapi/kind-local-path-helper:<provisioner version>, built here by
# deploy/kind/images.sh: the shell the provisioner's helper pods run its setup and
# teardown scripts with (sh, mkdir, rm): Debian's static busybox, taken from the Debian
# root file system (deploy/images/rootfs.sh, passed as BASE), alone on scratch.
ARG BASE
FROM ${BASE} AS debian

FROM scratch
COPY rootfs/ /
COPY --from=debian /bin/busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
ENV PATH=/bin
ENTRYPOINT ["/bin/sh"]
