// Package dockerfilecheck parses the Dockerfiles under deploy/docker with BuildKit's own
// Dockerfile parser and checks each image's shape: a multi-stage build, a static Go
// binary, the build metadata labels, and a final stage that runs as a non-root user.
//
// It is a module of its own, outside go.work, on purpose: BuildKit's module graph would
// raise the versions of shared dependencies (the AWS SDK and others) for every module of
// the workspace. `make dockerfile-check` runs it with GOWORK=off.
package dockerfilecheck
