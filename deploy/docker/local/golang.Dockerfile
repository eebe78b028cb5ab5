# Local stand-in for the public golang:<version>-bookworm image, where no registry is
# reachable: a Debian bookworm root file system (deploy/images/rootfs.sh, the one
# images.sh makes) with the host's Go toolchain in /usr/local/go. deploy/images/images.sh
# builds it (context: a directory holding `go`, a copy of the toolchain) and tags it
# customerapi/local-golang:<go version>-bookworm; the services' Dockerfiles use it as
# BUILD_IMAGE.
ARG ROOTFS_IMAGE=debian:bookworm-slim

FROM ${ROOTFS_IMAGE}
COPY go /usr/local/go
ENV GOPATH=/go \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GOTOOLCHAIN=local
RUN go version && mkdir -p /go/bin /go/pkg/mod
WORKDIR /go
