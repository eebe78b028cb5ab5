# Images of the chart, built here (included by the Makefile). deploy/images/images.sh does
# the work; see its header.
#
#   make images          every image the chart needs (tag IMAGE_TAG, default dev)
#   make images-test     run them together with no network and check each (images-test.sh)
#   make images-list     the references the chart needs, one a line (for kind load)
#
# IMAGES_BASE=local (default) builds offline from stand-ins made here: the Dockerfiles' base
# images (build ARGs defaulting to golang:1.26-bookworm, gcr.io/distroless/static-debian12
# and debian:bookworm-slim) become a Go build image made of a debootstrap root file system
# and the host's Go toolchain, and a FROM-scratch runtime image; builds run with
# --network none from a context holding `go work vendor`. IMAGES_BASE=public builds
# with the public base images and the network, where a registry is reachable.
IMAGES_BASE ?= local
IMAGE_TAG   ?= dev
DEPS_TAG    ?= dev
IMAGES_ENV   = IMAGES_BASE=$(IMAGES_BASE) IMAGE_TAG=$(IMAGE_TAG) DEPS_TAG=$(DEPS_TAG)

##@ Kubernetes
.PHONY: images images-test images-list
images: ## Build every image the chart needs, here, offline (docker started when needed; IMAGES_BASE=public for the public base images)
	$(IMAGES_ENV) nice -n 10 deploy/images/images.sh all

images-test: ## Run the built images together with no network: PostgreSQL, broker, every service and the gateway ready
	$(IMAGES_ENV) deploy/images/images-test.sh

images-list: ## Print the image references the chart needs (what kind loads)
	@$(IMAGES_ENV) deploy/images/images.sh list
