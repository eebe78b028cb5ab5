# Local stand-in for gcr.io/distroless/static-debian12:nonroot, where no registry is
# reachable: an empty image with what a static Go binary needs from it: Debian's CA
# certificates, /etc/passwd and /etc/group with root, nobody (65534) and nonroot (65532,
# home /home/nonroot), /etc/nsswitch.conf, and a world-writable /tmp; user nonroot.
# deploy/images/images.sh builds it from a root file system holding ca-certificates
# (the one images.sh makes with rootfs.sh) and tags it customerapi/local-static:<hash>; the
# services' Dockerfiles use it as RUNTIME_IMAGE.
ARG ROOTFS_IMAGE=debian:bookworm-slim

FROM ${ROOTFS_IMAGE} AS files
RUN set -eu; \
    if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates; \
    fi; \
    mkdir -p /out/etc/ssl/certs /out/tmp /out/home/nonroot; \
    cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ca-certificates.crt; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/out/etc/passwd; \
    printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >/out/etc/group; \
    printf 'hosts: files dns\n' >/out/etc/nsswitch.conf; \
    chmod 1777 /out/tmp; \
    chown 65532:65532 /out/home/nonroot; \
    chmod 700 /out/home/nonroot

FROM scratch
COPY --from=files /out/ /
USER 65532:65532
