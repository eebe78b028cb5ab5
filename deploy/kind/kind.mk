# The kind cluster `customer-api` (deploy/kind/kind.sh): `make kind-up`, `make kind-down`,
# `make kind-node`, `make kind-smoke`. Include from the Makefile after
# deploy/kind/kind-tools.mk (its kind-components target builds what the node image holds,
# and KIND). The kubeconfig is .cache/kind/kubeconfig:
#   export KUBECONFIG=$(CURDIR)/.cache/kind/kubeconfig   (or: eval "$(deploy/kind/kind.sh env)")
KIND_KUBECONFIG := $(CURDIR)/.cache/kind/kubeconfig

##@ Kubernetes
.PHONY: kind-node
kind-node: kind-components ## Build the kind node image (cached by its inputs' hash)
	deploy/kind/kind.sh node

.PHONY: kind-up
kind-up: kind-components ## Create the kind cluster customer-api (2 nodes, internal network), kubeconfig .cache/kind/kubeconfig
	deploy/kind/kind.sh up

.PHONY: kind-down
kind-down: ## Delete the kind cluster and its network
	deploy/kind/kind.sh down

# The cluster's own checks, with the zero-packet capture around them (the cluster must
# already be up; nothing else on the machine may use the network meanwhile).
.PHONY: kind-smoke
kind-smoke: ## Check the kind cluster (nodes, Service, DNS, PVC, NetworkPolicy) with a capture that must see 0 packets
	deploy/kind/capture.sh start
	deploy/kind/smoke.sh || { deploy/kind/capture.sh stop; exit 1; }
	deploy/kind/capture.sh stop
