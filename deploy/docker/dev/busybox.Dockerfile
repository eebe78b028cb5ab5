# Small-tools image of the chart (the `helm test` pod's sh, seq and wget): Debian's
# statically linked busybox (busybox-static) on an empty image, with every applet linked in
# /bin and an unprivileged user nobody (65534). Stands in for the public busybox image.
#
# The build context is this directory:
#   docker build -f deploy/docker/dev/busybox.Dockerfile -t customerapi/busybox deploy/docker/dev
# BASE_IMAGE defaults to Debian's public image (the package is then installed from
# Debian's archive); deploy/images/images.sh passes a root file system that already holds
# it (the one rootfs.sh makes for images.sh), and builds with no network.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS busybox
RUN set -eu; \
    if [ ! -x /bin/busybox ]; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends busybox-static; \
    fi; \
    mkdir -p /out/bin /out/etc /out/tmp; \
    cp /bin/busybox /out/bin/busybox; \
    for applet in $(/out/bin/busybox --list); do \
        [ "$applet" = busybox ] || ln -s busybox "/out/bin/$applet"; \
    done; \
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >/out/etc/passwd; \
    printf 'root:x:0:\nnogroup:x:65534:\n' >/out/etc/group; \
    chmod 1777 /out/tmp

FROM scratch
COPY --from=busybox /out/ /
ENV PATH=/bin
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="customerapi-busybox" \
      org.opencontainers.image.description="Customer API platform: busybox (Debian's busybox-static) for the chart's test pod" \
      org.opencontainers.image.vendor="Customer API platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
USER 65534:65534
CMD ["sh"]
