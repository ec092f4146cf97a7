# Glassplane: `make up` runs the all-in-one cluster, `make test` runs every test.
GO        ?= go
BIN       := bin/glassplane
DATA_DIR  ?= $(or $(GLASSPLANE_DATA_DIR),./glassplane-data)
UP_FLAGS  ?= --simulated-nodes 2
TEMPL_SRC := $(shell find components web -name '*.templ' 2>/dev/null)
TEMPL_GO  := $(TEMPL_SRC:.templ=_templ.go)
GO_SRC    := $(shell find . -name '*.go' -not -path './bin/*' 2>/dev/null)
STATIC    := $(shell find static -type f 2>/dev/null)
E2E_PKGS  := ./cmd/glassplane/e2e/...

export GOFLAGS ?= -mod=mod

.PHONY: all build up deps deps-runtime test test-unit test-e2e test-ecosystem bench lint generate templ-check clean conformance conformance-smoke conformance-focus

all: build

build: $(BIN)

$(BIN): $(TEMPL_GO) $(GO_SRC) $(STATIC) go.mod go.sum
	@if [ -e $(BIN) ]; then echo "building $(BIN)..."; else echo "building $(BIN) (the first build downloads and compiles the dependencies: about 4-5 minutes on 2 cores)..."; fi
	$(GO) build -o $(BIN) ./cmd/glassplane

# templ generate, run from the repository root (the generated files name
# their sources by that path) when any component's source changed.
$(TEMPL_GO) &: $(TEMPL_SRC)
	$(GO) tool templ generate

deps-runtime:
	bash scripts/install-deps.sh runtime

deps:
	bash scripts/install-deps.sh test

up: deps-runtime build
	@echo "starting $(BIN) up --data-dir $(DATA_DIR) (Ctrl-C stops it; $(BIN) down --data-dir $(DATA_DIR) from another terminal)..."
	$(BIN) up --data-dir $(DATA_DIR) $(UP_FLAGS)

# Unit tests first, then the integration and end-to-end tests, which share the
# one binary built above, then the ecosystem's tools against it.
test: deps build test-unit test-e2e test-ecosystem

test-unit:
	$(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -v /e2e)
	cd test/conformance && $(GO) test -count=1 .

test-e2e: build
	GLASSPLANE_BIN=$(abspath $(BIN)) $(GO) test -count=1 -p 1 -timeout 40m $(E2E_PKGS)

# A controller-runtime operator and the helm CLI (built from helm.sh/helm/v4)
# against a fresh cluster: test/ecosystem, a Go module of its own so the
# product's go.mod carries neither.
test-ecosystem: build
	cd test/ecosystem && GLASSPLANE_BIN=$(abspath $(BIN)) $(GO) test -count=1 -timeout 20m .

bench: deps build
	GLASSPLANE_BIN=$(abspath $(BIN)) $(GO) test -count=1 -p 1 -run '^$$' -bench . -benchtime 1x -timeout 40m $(E2E_PKGS)
	$(GO) test -count=1 -run '^$$' -bench BenchmarkProxySync -benchtime 5x ./controlplane/proxy/

# Kubernetes v1.37.2's [Conformance] specs against a fresh cluster with a real
# containerd node (docs/conformance.md): the full run (about 45 minutes on 2 cores)
# rewrites docs/conformance.md; the smoke subset (test/conformance/smoke.txt)
# fails when one of its specs fails.
conformance: build
	GLASSPLANE_BIN=$(abspath $(BIN)) bash test/conformance/run.sh full

conformance-smoke: build
	GLASSPLANE_BIN=$(abspath $(BIN)) bash test/conformance/run.sh smoke

# The [Conformance] specs matching FOCUS (a Ginkgo regex), e.g.
# make conformance-focus FOCUS='ReplicationController'.
conformance-focus: build
	GLASSPLANE_BIN=$(abspath $(BIN)) bash test/conformance/run.sh focus '$(FOCUS)'

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

generate:
	$(GO) run k8s.io/code-generator/cmd/deepcopy-gen@$$($(GO) list -m -f '{{.Version}}' k8s.io/api) --output-file zz_generated.deepcopy.go --go-header-file /dev/null ./api/v1alpha1
	bash controlplane/apiserver/openapi/generate.sh
	$(GO) tool templ generate

templ-check:
	$(GO) tool templ generate
	git diff --exit-code -- '*_templ.go'

clean:
	rm -rf bin
