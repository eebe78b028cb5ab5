# The kind cluster's components, built here from the Go module proxy and the Kubernetes
# module's C source (deploy/kind/COMPONENTS.md): kind itself, containerd for the node's
# base image and crictl, and the binaries behind the images kubeadm and the cluster's
# add-ons run (etcd, CoreDNS, pause, kube-router, local-path-provisioner). The Kubernetes
# binaries (kubelet, kubeadm, kube-proxy and the control plane) come from $(KUBE_BIN),
# which the Makefile builds from tools/k8s.
#
# Included by the Makefile after its Kubernetes section (it uses pins, K8S_VERSION,
# KUBE_BIN, GO); by hand: make -f Makefile -f deploy/kind/kind-tools.mk kind-components.
#
# Each upstream is its own module under tools/kind/<name> (its go.mod and go.sum are the
# pins); a binary is built into .cache/kind/bin/<name>-<version>-<pins hash>/, a
# temporary directory moved into place whole, so a changed pin builds anew and an
# interrupted build leaves nothing that looks finished. Version stamps are those of the
# upstream release builds.
KIND_CACHE        := $(CURDIR)/.cache/kind
KIND_TOOLS_BIN    := $(KIND_CACHE)/bin
GO                ?= go
pins              ?= $(shell cat $(1)/go.mod $(1)/go.sum | sha256sum | cut -c1-12)
# The version a tools/kind module pins for a module path: $(call kind_pin,<dir>,<module>).
kind_pin           = $(shell grep -oE '$(subst .,\.,$(2)) v[0-9][^ ]*' tools/kind/$(1)/go.mod | head -1 | cut -d' ' -f2)
kind_bin_dir       = $(KIND_TOOLS_BIN)/$(1)-$(2)-$(call pins,tools/kind/$(1))

KIND_VERSION            := $(call kind_pin,kind,sigs.k8s.io/kind)
KIND                    := $(call kind_bin_dir,kind,$(KIND_VERSION))/kind
CONTAINERD_VERSION      := $(call kind_pin,containerd,github.com/containerd/containerd/v2)
CONTAINERD_BIN          := $(call kind_bin_dir,containerd,$(CONTAINERD_VERSION))
CRICTL_VERSION          := $(call kind_pin,cri-tools,sigs.k8s.io/cri-tools)
CRICTL                  := $(call kind_bin_dir,cri-tools,$(CRICTL_VERSION))/crictl
KIND_ETCD_VERSION       := $(call kind_pin,etcd,go.etcd.io/etcd/server/v3)
KIND_ETCD               := $(call kind_bin_dir,etcd,$(KIND_ETCD_VERSION))/etcd
COREDNS_VERSION         := $(call kind_pin,coredns,github.com/coredns/coredns)
COREDNS                 := $(call kind_bin_dir,coredns,$(COREDNS_VERSION))/coredns
KUBE_ROUTER_VERSION     := $(call kind_pin,kube-router,github.com/cloudnativelabs/kube-router/v2)
KUBE_ROUTER             := $(call kind_bin_dir,kube-router,$(KUBE_ROUTER_VERSION))/kube-router
LOCAL_PATH_VERSION      := $(call kind_pin,local-path-provisioner,github.com/rancher/local-path-provisioner)
LOCAL_PATH_PROVISIONER  := $(call kind_bin_dir,local-path-provisioner,$(LOCAL_PATH_VERSION))/local-path-provisioner
# pause is C, from the k8s.io/kubernetes module tools/k8s pins (build/pause/linux/pause.c);
# its own version (build/pause/Makefile's TAG) is written next to it, in VERSION.
PAUSE                   := $(KIND_TOOLS_BIN)/pause-$(K8S_VERSION)-$(call pins,tools/k8s)/pause
export KIND KIND_VERSION CONTAINERD_BIN CONTAINERD_VERSION CRICTL CRICTL_VERSION KIND_ETCD KIND_ETCD_VERSION COREDNS \
	COREDNS_VERSION KUBE_ROUTER KUBE_ROUTER_VERSION LOCAL_PATH_PROVISIONER LOCAL_PATH_VERSION PAUSE

kind_tooldir = $(patsubst %/,%,$(dir $@))

$(KIND):
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	cd tools/kind/kind && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-buildid= -s -w" -o $(kind_tooldir).tmp/ tool
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

# kind's base image builds containerd with these tags (images/base/Dockerfile): no optional
# snapshotters. CGO_ENABLED=0 leaves out btrfs too.
$(CONTAINERD_BIN)/containerd:
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	cd tools/kind/containerd && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -tags "no_aufs no_zfs no_btrfs no_devmapper" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION) \
		-X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2" -o $(kind_tooldir).tmp/ tool
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

$(CRICTL):
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	cd tools/kind/cri-tools && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w \
		-X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)" -o $(kind_tooldir).tmp/ tool
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

$(KIND_ETCD):
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	cd tools/kind/etcd && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(kind_tooldir).tmp/etcd .
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

$(COREDNS):
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	cd tools/kind/coredns && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w \
		-X github.com/coredns/coredns/coremain.GitCommit=$(COREDNS_VERSION)" -o $(kind_tooldir).tmp/ tool
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

$(KUBE_ROUTER):
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	cd tools/kind/kube-router && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w \
		-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$(KUBE_ROUTER_VERSION)" -o $(kind_tooldir).tmp/ tool
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

$(LOCAL_PATH_PROVISIONER):
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	cd tools/kind/local-path-provisioner && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w \
		-X main.VERSION=$(LOCAL_PATH_VERSION)" -o $(kind_tooldir).tmp/ tool
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

# As build/pause/Makefile does (CFLAGS = -Os -Wall -Werror -static -DVERSION=v$(TAG)-$(REV)),
# REV being the Kubernetes release the source comes from.
$(PAUSE):
	@rm -rf $(kind_tooldir).tmp && mkdir -p $(kind_tooldir).tmp
	@src=$$(cd tools/k8s && GOWORK=off $(GO) mod download -json k8s.io/kubernetes | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
		tag=$$(sed -n 's/^TAG ?= *//p' $$src/build/pause/Makefile) && [ -n "$$tag" ] && \
		echo "gcc pause $$tag from $$src/build/pause/linux/pause.c" && \
		gcc -Os -Wall -Werror -static -DVERSION=v$$tag-$(K8S_VERSION) -o $(kind_tooldir).tmp/pause $$src/build/pause/linux/pause.c && \
		strip $(kind_tooldir).tmp/pause && echo "$$tag" > $(kind_tooldir).tmp/VERSION
	@rm -rf $(kind_tooldir) && mv $(kind_tooldir).tmp $(kind_tooldir)

KIND_COMPONENT_BINS := $(KIND) $(CONTAINERD_BIN)/containerd $(CRICTL) $(KIND_ETCD) $(COREDNS) $(KUBE_ROUTER) \
	$(LOCAL_PATH_PROVISIONER) $(PAUSE) $(KUBE_BIN)

##@ Kubernetes
.PHONY: kind-component-bins
kind-component-bins: $(KIND_COMPONENT_BINS) ## Build kind, containerd and the kind cluster's component binaries into .cache/kind/bin (when missing)

.PHONY: kind-components
kind-components: kind-component-bins ## The kind components: binaries, images under kubeadm's and kind's tags, the node's Kubernetes tarball (deploy/kind/COMPONENTS.md)
	KUBE_BIN=$(KUBE_BIN) K8S_VERSION=$(K8S_VERSION) deploy/kind/images.sh all

.PHONY: kind-components-check
kind-components-check: kind-components ## Each component binary runs --version, each image's entrypoint runs with no network, kubeadm's image list is what was built
	KUBE_BIN=$(KUBE_BIN) K8S_VERSION=$(K8S_VERSION) deploy/kind/images.sh check
	@for m in kind containerd cri-tools etcd coredns kube-router local-path-provisioner; do \
		(cd tools/kind/$$m && GOWORK=off $(GO) mod tidy -diff >/dev/null) || { echo "go mod tidy would change tools/kind/$$m"; exit 1; }; done
