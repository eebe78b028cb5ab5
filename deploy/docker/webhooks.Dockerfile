# syntax=docker/dockerfile:1
# Image of the webhooks deployable. GENERATED from deploy/docker/Dockerfile.tmpl by
# `make dockerfiles`: edit the template, not this file (a test checks they agree).
#
# Build from the repository root (the go.work workspace is the build context):
#   docker build -f deploy/docker/webhooks.Dockerfile -t customerapi/webhooks .

ARG GO_VERSION=1.26

# Build stage: the whole workspace, so the binary builds exactly as `go build` does locally.
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
COPY . .
# The version and revision also go into the binary: customerapi_build_info reports them.
ARG VERSION=dev
ARG REVISION=unknown
# The module and build caches live in BuildKit cache mounts, so a rebuild after a code
# change downloads nothing and recompiles only what changed.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w -X github.com/customerapi/platform/libs/telemetry.Version=${VERSION} -X github.com/customerapi/platform/libs/telemetry.Revision=${REVISION}" \
    -o /out/webhooks ./services/webhooks

# Final stage: a static binary on distroless, as the unprivileged "nonroot" user.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="customerapi-webhooks" \
      org.opencontainers.image.description="Customer API platform: the webhooks service" \
      org.opencontainers.image.vendor="Customer API platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/webhooks /usr/local/bin/webhooks
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/webhooks"]
