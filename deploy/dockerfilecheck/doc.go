// Package dockerfilecheck parses the Dockerfiles under deploy/docker with BuildKit's own
// Dockerfile parser and checks each image's shape: a multi-stage build, a static Go
// binary, the build metadata labels, and a final stage that runs as a non-root user; the
// base images given as build arguments with public defaults (so deploy/images/images.sh
// can point them at stand-ins built where no registry is reachable), and no `# syntax=`
// directive (which would make BuildKit fetch its front end from a registry). The images of
// the chart's development dependencies (deploy/docker/dev) and the local stand-ins
// (deploy/docker/local) are checked for the same base-image and directive rules and for
// the users the chart runs them as.
//
// It is a module of its own, outside go.work, on purpose: BuildKit's module graph would
// raise the versions of shared dependencies (the AWS SDK and others) for every module of
// the workspace. `make dockerfile-check` runs it with GOWORK=off.
package dockerfilecheck
