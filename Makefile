# Customer API platform. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/bin
MODULES   := $(shell $(GO) list -m -f '{{.Dir}}')
PKGS      := $(shell $(GO) list -m -f '{{.Path}}/...')
SERVICES  := $(notdir $(wildcard services/*))
TEST_FLAGS ?= -count=1 -timeout 25m

##@ Run
.PHONY: help
help: ## Show this help
	@awk -v color="$$([ -t 1 ] && echo 1)" -f scripts/help.awk $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Make sure the PostgreSQL server binaries are installed
	@scripts/ensure-postgres.sh

.PHONY: build
build: ## Build the gateway, every service and the local runner into bin/
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./gateway $(addprefix ./services/,$(SERVICES)) ./cmd/devstack

.PHONY: run
run: deps build ## Run the whole system locally (gateway on 127.0.0.1:25001)
	@BIN_DIR=$(BIN) $(BIN)/devstack

##@ Test
.PHONY: test
test: deps lint ## Run every test of every module (unit, integration, end-to-end)
	$(GO) test $(TEST_FLAGS) $(PKGS)

.PHONY: test-short
test-short: ## Run the tests without the end-to-end suite
	$(GO) test $(TEST_FLAGS) $(filter-out %/e2e/...,$(PKGS))

.PHONY: bench
bench: deps build ## Run the benchmarks and write the results into docs/benchmarks.md (needs wrk and nginx; installs them on Debian as root)
	@command -v wrk >/dev/null && command -v nginx >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx-light >/dev/null; }
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 2s $(filter-out %/e2e/... %/bench/...,$(PKGS)) 2>&1 | grep -E '^(Benchmark|goos|goarch|cpu|pkg)' | tee $(BIN)/go-bench.txt
	$(GO) run ./bench/cmd/loadbench -out docs/benchmarks.md -go-bench $(BIN)/go-bench.txt
	$(GO) run ./bench/cmd/loadbench -bin $(BIN) -out docs/benchmarks.md
	$(GO) run ./bench/cmd/loadbench -bin $(BIN) -events -out docs/benchmarks.md
	$(GO) run ./bench/cmd/loadbench -bin $(BIN) -events -event-sweep 10,100,200,300 -out docs/benchmarks.md

.PHONY: bench-large
bench-large: deps ## Person search at 10,000,000 persons (BenchmarkSearch with BENCH_LARGE=1; the fill alone takes many minutes)
	cd services/persons && BENCH_LARGE=1 $(GO) test -run '^$$' -bench 'BenchmarkSearch/persons=10000000' -benchtime 100x -timeout 3h ./internal/adapters

.PHONY: lint
lint: golangci-lint ## go mod tidy checks over every module, then golangci-lint (vet, gofmt, the curated linters, the layers' import direction)
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff >/dev/null) || { echo "go mod tidy would change $$m"; exit 1; }; done

# golangci-lint with the curated linters and the layers' import direction of .golangci.yml,
# built from tools/golangci (its go.mod and go.sum are the pin) into .cache/tools, per pin.
GOLANGCI_VERSION := $(shell grep -oE 'golangci/golangci-lint/v2 v[0-9][^ ]*' tools/golangci/go.mod | cut -d' ' -f2)
GOLANGCI         := $(CURDIR)/.cache/tools/golangci-lint-$(GOLANGCI_VERSION)-$(shell cat tools/golangci/go.mod tools/golangci/go.sum | sha256sum | cut -c1-12)

$(GOLANGCI):
	@rm -rf $@.tmp && mkdir -p $(dir $@)
	cd tools/golangci && GOWORK=off $(GO) build -ldflags "-s -w" -o $@.tmp github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	@mv $@.tmp $@

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI) ## Run golangci-lint (.golangci.yml) over every module and check the services' layers; prove the rules catch each wrong import
	@tools/golangci/fixture.sh $(GOLANGCI)
	@status=0; for m in $(MODULES); do (cd $$m && $(GOLANGCI) run --config $(CURDIR)/.golangci.yml ./...) || status=1; done; \
	  tools/golangci/layout.sh services/* || status=1; exit $$status

.PHONY: help-check
help-check: ## Test make help: the five groups, every documented target once, one column
	scripts/help_test.sh

.PHONY: shell-check
shell-check: ## Run shellcheck over the shell scripts of deploy/, scripts/ and .ci (installs Debian's shellcheck as root when missing)
	@command -v shellcheck >/dev/null || { [ "$$(id -u)" = 0 ] && { apt-get install -y -qq shellcheck || { apt-get update -qq && apt-get install -y -qq shellcheck; }; } >/dev/null; } || { echo "shellcheck is missing: apt-get install shellcheck"; exit 1; }
	shellcheck -x deploy/*/*.sh deploy/*/*/*.sh scripts/*.sh .ci/run

# Cheap checks of the scripts and of make help itself, in make test.
test: shell-check help-check

##@ Run
.PHONY: fmt
fmt: ## Format every Go file
	gofmt -w $(MODULES)

.PHONY: clean
clean: ## Remove built binaries (keeps .data; `rm -rf .data` resets the local system)
	rm -rf $(BIN)

# --------------------------------------------------------------------------------------
# Kubernetes delivery: images (deploy/docker), the Helm chart (helm/customer-api),
# skaffold.yaml and the kind loop (deploy/kind). See docs/kubernetes.md.
# K8S_TEST_DEPS is what `make test` needs for the chart checks: helm installed (the
# chart checks in deploy/chartcheck run with every module's tests) and the Dockerfile
# checks, whose module stays outside go.work.
TOOLS_BIN      := $(CURDIR)/.cache/bin
HELM_VERSION   := v3.21.4
# The Kubernetes minor version helm's client libraries have (release builds set it the
# same way); without it a `go install`ed helm assumes v1.20.
HELM_K8S_MINOR := 36
HELM           := $(TOOLS_BIN)/helm-$(HELM_VERSION)/helm
K8S_TEST_DEPS  := helm dockerfile-check kind-wrapper-check
export HELM

$(HELM):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) GOWORK=off $(GO) install -ldflags "-s -w \
		-X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
		-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(HELM_K8S_MINOR) \
		-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$(HELM_K8S_MINOR)" \
		helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

##@ Kubernetes
.PHONY: helm
helm: $(HELM) ## Install helm into .cache/bin with go install (when missing)

.PHONY: chart-check
chart-check: helm dockerfile-check ## Lint, render and check the chart, skaffold.yaml, kind config and Dockerfiles (no Docker or cluster)
	cd deploy/chartcheck && $(GO) test -count=1 ./...

.PHONY: dockerfile-check
dockerfile-check: ## Parse and check the Dockerfiles with BuildKit's parser (own module, outside go.work)
	@out=$$(gofmt -l deploy/dockerfilecheck); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	cd deploy/dockerfilecheck && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) mod tidy -diff >/dev/null
	cd deploy/dockerfilecheck && GOWORK=off $(GO) test -count=1 ./...

.PHONY: kind-wrapper-check
kind-wrapper-check: ## Test deploy/kind/docker-wrapper.sh's rewrites of kind's docker calls against a fake docker (no Docker needed)
	deploy/kind/docker-wrapper_test.sh

.PHONY: chart-boot
chart-boot: helm deps ## Boot every binary with the exact environment the chart gives its pod (dev values, local PostgreSQL and broker)
	cd deploy/chartcheck && $(GO) test -tags chartboot -count=1 -run TestDevValuesBootTheBinaries .

.PHONY: dockerfiles
dockerfiles: ## Regenerate deploy/docker/<deployable>.Dockerfile from deploy/docker/Dockerfile.tmpl
	$(GO) run ./deploy/chartcheck/cmd/dockerfiles

# The chart checks run with every module's tests: `make test` installs what they need.
test: $(K8S_TEST_DEPS)

# --------------------------------------------------------------------------------------
# The OpenAPI document (api/openapi.yaml): two linters, installed with npm from the
# committed lock file into tools/apilint/node_modules (again only when the lock changes),
# and the breaking-change check, oasdiff, a Go module built into .cache/bin. Both run with
# `make test`; see docs/api.md ("Checks of the document").
APILINT_DIR     := tools/apilint
APILINT_STAMP   := $(APILINT_DIR)/node_modules/.installed
OASDIFF_VERSION := v1.36.0
OASDIFF         := $(TOOLS_BIN)/oasdiff-$(OASDIFF_VERSION)/oasdiff
# No telemetry or update checks from the linters (the machines reach npm and nothing else).
APILINT_ENV     := REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true SCARF_ANALYTICS=false DO_NOT_TRACK=1

$(APILINT_STAMP): $(APILINT_DIR)/package.json $(APILINT_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "api-lint needs Node.js 20.19+ and npm"; exit 1; }
	cd $(APILINT_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

$(OASDIFF):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) GOWORK=off $(GO) install github.com/oasdiff/oasdiff@$(OASDIFF_VERSION)

##@ API and clients
.PHONY: api-lint
api-lint: $(APILINT_STAMP) ## Lint api/openapi.yaml with redocly and spectral (pinned in tools/apilint; errors fail)
	cd $(APILINT_DIR) && $(APILINT_ENV) node_modules/.bin/redocly lint --config redocly.yaml ../../api/openapi.yaml
	cd $(APILINT_DIR) && $(APILINT_ENV) node_modules/.bin/spectral lint --ruleset .spectral.yaml --fail-severity error ../../api/openapi.yaml

.PHONY: api-diff
api-diff: $(OASDIFF) ## Fail on a breaking change of api/openapi.yaml against the first parent commit (oasdiff)
	tools/api-diff.sh $(OASDIFF)

.PHONY: api-check
api-check: api-lint api-diff ## The document's checks: lint, breaking changes and its Go tests
	cd api && $(GO) test -count=1 ./...

test: api-lint api-diff

# --------------------------------------------------------------------------------------
# The clients generated from api/openapi.yaml (clients/go, generated code committed):
# `make clients` regenerates them, `make clients-check` (part of `make test`) fails when
# the committed code differs from what the document generates. See docs/clients.md.
OAPI_CODEGEN := github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.5.1

TS_DIR        := clients/typescript
TS_STAMP      := $(TS_DIR)/node_modules/.installed
RECEIVER_NODE := examples/webhook-receiver/node
RECEIVER_STAMP := $(RECEIVER_NODE)/node_modules/.installed

$(TS_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "the TypeScript client needs Node.js 20+ and npm"; exit 1; }
	cd $(TS_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

$(RECEIVER_STAMP): $(RECEIVER_NODE)/package.json $(RECEIVER_NODE)/package-lock.json $(TS_STAMP)
	cd $(RECEIVER_NODE) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: clients
clients: $(TS_STAMP) ## Regenerate the clients and the API's Go types (api/apitypes) from api/openapi.yaml
	cd clients/go && GOWORK=off $(GO) run $(OAPI_CODEGEN) -config oapi-codegen.yaml ../../api/openapi.yaml
	cd api && GOWORK=off $(GO) run ./internal/typesoverlay
	cd api/apitypes && GOWORK=off $(GO) run $(OAPI_CODEGEN) -config oapi-codegen.yaml ../openapi.yaml
	cd $(TS_DIR) && $(APILINT_ENV) npm run --silent generate
	$(MAKE) --no-print-directory clients-extras

.PHONY: ts-build
ts-build: $(TS_STAMP) $(RECEIVER_STAMP) ## Build the TypeScript client (tsc --strict) and the example receiver's packages, quietly (the quickstart's step)
	cd $(TS_DIR) && rm -rf dist && node_modules/.bin/tsc -p tsconfig.json

.PHONY: ts-client
ts-client: ts-build ## Build the TypeScript client and run its unit tests
	cd $(TS_DIR) && node --test dist/test/unit/

.PHONY: clients-check
clients-check: clients ## Regenerate the clients and fail if the committed code differs
	@git diff --exit-code --stat -- clients/ api/codesamples.json api/apitypes/ || { echo "the generated clients differ from api/openapi.yaml: run make clients and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- clients/ api/codesamples.json api/apitypes/)" || { git status --short -- clients/ api/codesamples.json api/apitypes/; echo "untracked generated files: run make clients and commit"; exit 1; }

# make clients-extras, make ts-pack (the clients from another project: docs/clients.md).
include clients/clients.mk

test: clients-check docs-assets-check chromium ts-client

# The reference at /docs: Redoc's standalone bundle, pinned in tools/docs (committed
# package-lock.json), copied into gateway/internal/docs/assets and embedded in the
# gateway, so nothing loads from a CDN at run time.
DOCS_DIR   := tools/docs
DOCS_STAMP := $(DOCS_DIR)/node_modules/.installed
REDOC_DIST := $(DOCS_DIR)/node_modules/redoc/bundles
DOCS_ASSETS := gateway/internal/docs/assets

$(DOCS_STAMP): $(DOCS_DIR)/package.json $(DOCS_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "docs-assets needs Node.js and npm"; exit 1; }
	cd $(DOCS_DIR) && npm ci --ignore-scripts --omit=peer --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: docs-assets
docs-assets: $(DOCS_STAMP) ## Copy the pinned Redoc bundle into the gateway (embedded for /docs)
	cp $(REDOC_DIST)/redoc.standalone.js $(REDOC_DIST)/redoc.standalone.js.LICENSE.txt $(DOCS_ASSETS)/

.PHONY: docs-assets-check
docs-assets-check: $(DOCS_STAMP) ## Fail if the embedded Redoc bundle is not the one tools/docs pins
	@cmp -s $(REDOC_DIST)/redoc.standalone.js $(DOCS_ASSETS)/redoc.standalone.js || { echo "$(DOCS_ASSETS) differs from tools/docs: run make docs-assets"; exit 1; }

##@ Test
.PHONY: chromium
chromium: ## Make sure Debian's chromium is installed (the /docs rendering test)
	@scripts/ensure-chromium.sh

# make test requires the /docs rendering test and the TypeScript client's test to run (not skip).
test: export E2E_REQUIRE_CHROMIUM := 1
test: export E2E_REQUIRE_TS := 1
# and runs docs/quickstart.md on a clean clone (skipped if make run's ports are taken).
test: export E2E_QUICKSTART := 1

.PHONY: quickstart-test
quickstart-test: deps ## Run every command of docs/quickstart.md on a clean clone of the committed tree
	E2E_QUICKSTART=1 E2E_REQUIRE_QUICKSTART=1 $(GO) test -count=1 -timeout 15m -run 'TestQuickstart' -v ./e2e/

# --------------------------------------------------------------------------------------
# Operations: the chart's alerts, dashboards and README, checked with the real programs.
# `make test` installs Prometheus (with promtool) and redis-server from Debian when
# missing, as it does PostgreSQL: deploy/chartcheck runs `promtool check/test rules` on
# the rendered alerts, and e2e/observability scrapes the whole system with a real
# Prometheus and shares the rate limit of two gateways through a real Redis
# (docs/observability.md). helm-docs generates helm/customer-api/README.md.
HELM_DOCS_VERSION := v1.14.2
HELM_DOCS         := $(TOOLS_BIN)/helm-docs-$(HELM_DOCS_VERSION)/helm-docs
HELM_DOCS_FLAGS   := --chart-search-root helm --sort-values-order file --log-level warning

$(HELM_DOCS):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) GOWORK=off $(GO) install github.com/norwoodj/helm-docs/cmd/helm-docs@$(HELM_DOCS_VERSION)

##@ Operations
.PHONY: ops-deps
ops-deps: ## Make sure prometheus, promtool and redis-server are installed (Debian packages, as root)
	@scripts/ensure-ops-tools.sh

.PHONY: chart-docs
chart-docs: $(HELM_DOCS) ## Regenerate helm/customer-api/README.md from values.yaml and README.md.gotmpl (helm-docs)
	$(HELM_DOCS) $(HELM_DOCS_FLAGS)

.PHONY: chart-docs-check
chart-docs-check: $(HELM_DOCS) ## Fail when helm/customer-api/README.md is not what helm-docs makes of values.yaml
	@$(HELM_DOCS) $(HELM_DOCS_FLAGS) --dry-run | diff -u helm/customer-api/README.md - >/dev/null || \
		{ echo "helm/customer-api/README.md is stale: run make chart-docs"; exit 1; }

.PHONY: dashboards
dashboards: ## Regenerate helm/customer-api/dashboards/*.json from their definitions (deploy/chartcheck/dashboards.go)
	$(GO) run ./deploy/chartcheck/cmd/dashboards

.PHONY: ops-check
ops-check: helm ops-deps chart-docs-check ## The operations checks: alerts (promtool), dashboards, chart README, real Prometheus and Redis
	cd deploy/chartcheck && $(GO) test -count=1 -run 'Ops|Alert|Dashboards' .
	$(GO) test -count=1 -v ./e2e/observability/...

test: ops-deps chart-docs-check

# The chart on a real Kubernetes control plane, without Docker (docs/kubernetes.md, "On a
# real API server"): etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kwok (a fake node: pods are scheduled and marked Ready, no container runs), each a
# process on 127.0.0.1 (deploy/cluster/cluster.sh). Everything is built from the Go module
# proxy into .cache/k8s: the control plane and kubectl from tools/k8s (k8s.io/kubernetes
# with its staging modules pinned), etcd from tools/etcd, skaffold from tools/skaffold
# (each module's go.mod and go.sum are the pins; a directory's name carries their hash,
# so a changed pin builds anew), kwok with go install. `make test-cluster` (after `make
# test` in .ci/run) installs, tests, upgrades, rolls back and uninstalls the chart there.
K8S_CACHE        := $(CURDIR)/.cache/k8s
pins              = $(shell cat $(1)/go.mod $(1)/go.sum | sha256sum | cut -c1-12)
K8S_VERSION      := $(shell grep -oE 'k8s\.io/kubernetes v[0-9][^ ]*' tools/k8s/go.mod | cut -d' ' -f2)
K8S_MINOR        := $(word 2,$(subst ., ,$(K8S_VERSION)))
KUBE_BIN         := $(K8S_CACHE)/kubernetes-$(K8S_VERSION)-$(call pins,tools/k8s)
ETCD_VERSION     := $(shell grep -oE 'go\.etcd\.io/etcd/server/v3 v[0-9][^ ]*' tools/etcd/go.mod | cut -d' ' -f2)
ETCD             := $(K8S_CACHE)/etcd-$(ETCD_VERSION)-$(call pins,tools/etcd)/etcd
KWOK_VERSION     := v0.8.0
KWOK             := $(K8S_CACHE)/kwok-$(KWOK_VERSION)/kwok
SKAFFOLD_VERSION := $(shell grep -oE 'GoogleContainerTools/skaffold/v2 v[0-9][^ ]*' tools/skaffold/go.mod | cut -d' ' -f2)
SKAFFOLD         := $(K8S_CACHE)/skaffold-$(SKAFFOLD_VERSION)-$(call pins,tools/skaffold)/skaffold
CLUSTERCERTS     := $(K8S_CACHE)/clustercerts
# The version stamps of a release build (hack/lib/version.sh): without them the API server
# reports v0.0.0 and fails the chart's kubeVersion.
K8S_LDFLAGS      := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(K8S_MINOR) -X $(p).gitTreeState=clean)
export KUBE_BIN ETCD KWOK SKAFFOLD CLUSTERCERTS
tooldir           = $(patsubst %/,%,$(dir $@))

# Each tool is built into a temporary directory and moved into place whole, so an
# interrupted build leaves nothing that looks finished.
$(KUBE_BIN):
	@rm -rf $@.tmp && mkdir -p $@.tmp
	cd tools/k8s && GOWORK=off CGO_ENABLED=0 $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $@.tmp/ tool
	@rm -rf $@ && mv $@.tmp $@

$(ETCD):
	@rm -rf $(tooldir).tmp && mkdir -p $(tooldir).tmp
	cd tools/etcd && GOWORK=off CGO_ENABLED=0 $(GO) build -ldflags "-s -w" -o $(tooldir).tmp/etcd .
	@rm -rf $(tooldir) && mv $(tooldir).tmp $(tooldir)

$(KWOK):
	@rm -rf $(tooldir).tmp && mkdir -p $(tooldir).tmp
	GOBIN=$(tooldir).tmp GOWORK=off CGO_ENABLED=0 $(GO) install -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	@rm -rf $(tooldir) && mv $(tooldir).tmp $(tooldir)

$(SKAFFOLD):
	@rm -rf $(tooldir).tmp && mkdir -p $(tooldir).tmp
	cd tools/skaffold && GOWORK=off CGO_ENABLED=0 $(GO) build -o $(tooldir).tmp/ -ldflags "-s -w \
		-X github.com/GoogleContainerTools/skaffold/v2/pkg/skaffold/version.version=$(SKAFFOLD_VERSION)" tool
	@rm -rf $(tooldir) && mv $(tooldir).tmp $(tooldir)

$(CLUSTERCERTS): tools/k8s/cmd/clustercerts/main.go tools/k8s/go.mod
	cd tools/k8s && GOWORK=off $(GO) build -o $@ ./cmd/clustercerts

##@ Kubernetes
.PHONY: cluster-tools
cluster-tools: $(KUBE_BIN) $(ETCD) $(KWOK) $(CLUSTERCERTS) ## Build the control plane, kubectl, etcd and kwok into .cache/k8s (when missing)

.PHONY: skaffold
skaffold: $(SKAFFOLD) ## Build skaffold into .cache/k8s (when missing; `make test-cluster` runs skaffold render)

.PHONY: cluster-up
cluster-up: cluster-tools ## Start the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok) on 127.0.0.1
	deploy/cluster/cluster.sh up

.PHONY: cluster-env
cluster-env: cluster-tools helm ## Print the exports that point kubectl and helm at it (eval the output of make -s cluster-env)
	@deploy/cluster/cluster.sh env

.PHONY: cluster-down
cluster-down: ## Stop the local control plane's processes (by PID) and wait for them to exit
	deploy/cluster/cluster.sh down

.PHONY: test-cluster
test-cluster: cluster-tools helm $(SKAFFOLD) ## The chart on the local control plane: server-side dry runs, install, test, upgrade, rollback, uninstall, break-it, skaffold render
	@out=$$(gofmt -l tools/k8s tools/etcd deploy/chartcheck); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	cd tools/k8s && GOWORK=off $(GO) vet ./cmd/...
	cd tools/etcd && GOWORK=off $(GO) vet .
	@for m in tools/k8s tools/etcd tools/skaffold; do (cd $$m && GOWORK=off $(GO) mod tidy -diff >/dev/null) || { echo "go mod tidy would change $$m"; exit 1; }; done
	deploy/cluster/test.sh

# --------------------------------------------------------------------------------------
# Real pods (docs/kubernetes.md, "Real pods on kind"): the images built here with no
# registry (deploy/images), the kind cluster's components and node image built from the Go
# module proxy and Debian's archive (deploy/kind), `make test-kind` (not yet in .ci/run) and
# the skaffold dev loop on that cluster.
include deploy/images/images.mk
include deploy/kind/kind-tools.mk
include deploy/kind/kind.mk
include deploy/kind/test-kind.mk
include deploy/kind/devloop.mk
