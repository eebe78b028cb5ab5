# The skaffold dev loop on the kind cluster (deploy/kind/devloop.sh, skaffold.yaml's kind
# profile). Include from the Makefile after the kind and images rules; the cluster must be
# up (`make kind-up`). See docs/kubernetes.md, "Development: skaffold dev".
#   make dev            skaffold dev -p kind: builds with deploy/images/images.sh, loads
#                       the images into kind, deploys into customer-api-dev, forwards the
#                       gateway to 127.0.0.1:25001, redeploys on change (Ctrl-C uninstalls)
#   make test-devloop   the loop's test: change the gateway's /docs title, see the new
#                       answer over HTTP, revert, see the old one; prints the times

##@ Kubernetes
.PHONY: dev
dev: $(SKAFFOLD) helm ## skaffold dev -p kind against the kind cluster (make kind-up first): images built offline, loaded, deployed into customer-api-dev, gateway on 127.0.0.1:25001
	SKAFFOLD=$(SKAFFOLD) HELM=$(HELM) deploy/kind/devloop.sh dev

.PHONY: test-devloop
test-devloop: $(SKAFFOLD) helm ## The skaffold loop's test on the kind cluster: a gateway change answered over HTTP, reverted; prints change-to-answer time
	SKAFFOLD=$(SKAFFOLD) HELM=$(HELM) deploy/kind/devloop.sh test
