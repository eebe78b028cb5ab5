# Image of the assets deployable. GENERATED from deploy/docker/Dockerfile.tmpl by
# `make dockerfiles`: edit the template, not this file (a test checks they agree).
#
# Build from the repository root (the go.work workspace is the build context):
#   docker build -f deploy/docker/assets.Dockerfile -t customerapi/assets .
# No `# syntax=` line: BuildKit's built-in front end (Docker 20.10+) reads this file, so a
# build fetches no front end from a registry.
#
# The base images are build arguments defaulting to the public ones. Where no registry is
# reachable, deploy/images/images.sh (`make images`) points them at stand-ins built on the
# machine and builds with no network: its context carries the modules (`go work vendor`),
# which `go build` then uses instead of downloading.
ARG BUILD_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

# Build stage: the whole workspace, so the binary builds exactly as `go build` does locally.
FROM ${BUILD_IMAGE} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
COPY . .
# The version and revision also go into the binary: customerapi_build_info reports them.
ARG VERSION=dev
ARG REVISION=unknown
# The module and build caches live in BuildKit cache mounts, so a rebuild after a code
# change downloads nothing and recompiles only what changed. With a vendor/ directory in
# the context (images.sh), the go command builds from it and reads no module cache.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w -X github.com/customerapi/platform/libs/telemetry.Version=${VERSION} -X github.com/customerapi/platform/libs/telemetry.Revision=${REVISION}" \
    -o /out/assets ./services/assets

# Final stage: a static binary on distroless (CA certificates, /etc/passwd with "nonroot"
# 65532, /tmp), as that unprivileged user.
FROM ${RUNTIME_IMAGE}
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="customerapi-assets" \
      org.opencontainers.image.description="Customer API platform: the assets service" \
      org.opencontainers.image.vendor="Customer API platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/assets /usr/local/bin/assets
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/assets"]
