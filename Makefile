# Customer API platform. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/bin
MODULES   := $(shell $(GO) list -m -f '{{.Dir}}')
PKGS      := $(shell $(GO) list -m -f '{{.Path}}/...')
SERVICES  := $(notdir $(wildcard services/*))
TEST_FLAGS ?= -count=1 -timeout 12m

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Make sure the PostgreSQL server binaries are installed
	@scripts/ensure-postgres.sh

.PHONY: build
build: ## Build the gateway, every service and the local runner into bin/
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./gateway $(addprefix ./services/,$(SERVICES)) ./libs/cmd/devstack

.PHONY: run
run: deps build ## Run the whole system locally (gateway on 127.0.0.1:25001)
	@BIN_DIR=$(BIN) $(BIN)/devstack

.PHONY: test
test: deps lint ## Run every test of every module (unit, integration, end-to-end)
	$(GO) test $(TEST_FLAGS) $(PKGS)

.PHONY: test-short
test-short: ## Run the tests without the end-to-end suite
	$(GO) test $(TEST_FLAGS) $(filter-out %/e2e/...,$(PKGS))

.PHONY: bench
bench: deps build ## Run the benchmarks and write the results into docs/benchmarks.md (needs wrk and nginx; installs them on Debian as root)
	@command -v wrk >/dev/null && command -v nginx >/dev/null || { [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx-light >/dev/null; }
	$(GO) test -run '^$$' -bench . -benchtime 2s $(filter-out %/e2e/...,$(PKGS)) 2>&1 | grep -E '^(Benchmark|goos|goarch|cpu|pkg)' | tee $(BIN)/go-bench.txt
	$(GO) run ./e2e/cmd/loadbench -out docs/benchmarks.md -go-bench $(BIN)/go-bench.txt
	$(GO) run ./e2e/cmd/loadbench -bin $(BIN) -out docs/benchmarks.md

.PHONY: lint
lint: ## gofmt, go vet and go mod tidy checks over every module
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff >/dev/null) || { echo "go mod tidy would change $$m"; exit 1; }; done

.PHONY: fmt
fmt: ## Format every Go file
	gofmt -w $(MODULES)

.PHONY: clean
clean: ## Remove built binaries (keeps .data; `rm -rf .data` resets the local system)
	rm -rf $(BIN)
