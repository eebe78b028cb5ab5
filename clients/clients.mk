# The clients' targets for use from other projects (docs/clients.md, "Using the clients
# from your own project"). Included by the Makefile after its clients section, whose
# GO, TS_DIR and TS_STAMP it uses.
#
# clients-extras: what clients/go/internal/clientgen (its own module, so it runs with
# GOWORK=off) writes from the document and client.gen.go, so run it after oapi-codegen:
# clients/go/iterators.gen.go (an <Operation>All iterator for every list operation) and
# the reference's code samples, api/codesamples.json (served in x-codeSamples), with the
# files that compile them, clients/go/examples_gen_test.go and
# clients/typescript/test/samples/samples.gen.ts. clients/go's TestGeneratedFilesAreUpToDate
# fails when one of them is stale.
# ts-pack: the TypeScript client compiled and packed by npm into
# clients/typescript/dist/customerapi-client-<version>.tgz, the file another project
# installs with `npm install /path/to/customerapi-client-<version>.tgz`.

CLIENTGEN_DIR := clients/go/internal/clientgen
TS_VERSION   = $(shell sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' $(TS_DIR)/package.json)
TS_TARBALL   = $(TS_DIR)/dist/customerapi-client-$(TS_VERSION).tgz
# What the tarball must hold: the compiled entry points of both exports and their types.
TS_PACKED   := package.json dist/src/index.js dist/src/index.d.ts dist/src/client.js dist/src/webhooks.js dist/src/webhooks.d.ts

##@ API and clients
.PHONY: clients-extras
clients-extras: ## Regenerate the Go client's list iterators and the reference's code samples (after make clients' generators)
	cd $(CLIENTGEN_DIR) && GOWORK=off $(GO) test -count=1 . && GOWORK=off $(GO) run .

.PHONY: ts-pack
ts-pack: ts-build ## Build the TypeScript client and npm pack it into clients/typescript/dist/*.tgz
	cd $(TS_DIR) && npm pack --offline --ignore-scripts --pack-destination dist --loglevel=error >/dev/null
	@files="$$(tar tzf $(TS_TARBALL))" || exit 1; \
	  for f in $(TS_PACKED); do grep -qx "package/$$f" <<<"$$files" || { echo "$(TS_TARBALL) lacks $$f"; exit 1; }; done; \
	  if grep -q '^package/dist/test/' <<<"$$files"; then echo "$(TS_TARBALL) carries the tests"; exit 1; fi
	@echo "$(TS_TARBALL): npm install $(CURDIR)/$(TS_TARBALL)"
