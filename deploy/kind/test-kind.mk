# `make test-kind` (deploy/kind/test-kind.sh): on the kind cluster of `make kind-up`, the
# images built and loaded, the chart installed with every pod Ready through its probes and
# `helm test`, the e2e/ suite against the in-cluster gateway, faults on pods under load,
# the NetworkPolicies, helm upgrade/rollback and the nodes' memory, all of it but the image
# build inside a capture that must see 0 packets on the host's outward interface.
# Include from the Makefile after deploy/kind/kind.mk, deploy/kind/kind-tools.mk and
# deploy/images/images.mk. Logs and the summary: .cache/kind-logs.
##@ Kubernetes
.PHONY: test-kind
test-kind: kind-up helm $(KUBE_BIN) ts-client chromium ## Platform on the kind cluster: images, chart, e2e, faults, policy, upgrade/rollback, memory (0 packets out)
	KUBECTL=$(KUBE_BIN)/kubectl deploy/kind/test-kind.sh

.PHONY: test-kind-clean
test-kind-clean: helm $(KUBE_BIN) ## Uninstall test-kind's release and delete its namespace
	KUBECTL=$(KUBE_BIN)/kubectl deploy/kind/test-kind.sh clean
