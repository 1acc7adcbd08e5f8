# Warden build and test entry points. See README.md.

GO        ?= go
WASM_ENV  := GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0
WASM_DIR  := bin/wasm
# Fuzz budgets are execution counts, not durations: with a duration, Go
# 1.26's fuzz coordinator can report its own deadline as a failure on a
# loaded machine (golang/go#75804).
FUZZTIME  ?= 50000x
# The version make build stamps into bin/warden (warden --version).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

# Every plugin main package: the first-party module, each first-party
# plugin's module of its own, examples, test fixtures.
PLUGIN_PKGS := $(sort $(dir $(wildcard plugins/firstparty/cmd/main.go plugins/*/*/cmd/main.go examples/guards/*/cmd/main.go \
	examples/builtins/*/cmd/main.go examples/extism-guard/cmd/main.go internal/testdata/guests/*/main.go)))

.PHONY: all build plugins console test fuzz check bench bench-tenants profile demo quickstart clean

all: build plugins

# The first-party module, which serves every first-party plugin (the seven
# guards, control, node and env) and which make build embeds into
# bin/warden (internal/firstparty, build tag warden_embed). A warden built
# without the tag (go run, go test, go build) builds it from source on
# first use. make plugins also builds each first-party plugin as a module
# of its own (bin/wasm/argpolicy.wasm, ...), which can take its slot's place.
FIRSTPARTY := firstparty
EMBED_DIR  := internal/firstparty/wasm

build: plugins console
	@rm -f $(EMBED_DIR)/*.wasm
	@for p in $(FIRSTPARTY); do cp $(WASM_DIR)/$$p.wasm $(EMBED_DIR)/$$p.wasm || exit 1; done
	$(GO) build -buildvcs=auto -tags warden_embed -ldflags "-X github.com/agentwarden/warden/internal/telemetry.version=$(VERSION)" -o bin/warden ./cmd/warden

# A plugin's file is named after its directory, or the directory above a cmd/.
# No VCS stamp: a module's digest depends on its sources only, so it is the
# same as warden's own build of them (internal/firstparty).
plugins:
	@mkdir -p $(WASM_DIR)
	@for d in $(PLUGIN_PKGS); do \
		d=$${d%/}; name=$$(basename $$d); \
		if [ "$$name" = cmd ]; then name=$$(basename $$(dirname $$d)); fi; \
		echo "wasm $$d -> $(WASM_DIR)/$$name.wasm"; \
		$(WASM_ENV) $(GO) build -buildmode=c-shared -trimpath -buildvcs=false -o $(WASM_DIR)/$$name.wasm ./$$d || exit 1; \
	done

# The web console (web/, Vite) built into internal/console/assets/app, which warden
# embeds; npm ci runs again only when the lock file changed.
console: web/node_modules/.package-lock.json
	cd web && npm run build

web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm ci --no-audit --no-fund

# Tests build the plugins they need on their own; the fuzzers run briefly on
# their kept corpora.
test: plugins console
	$(GO) test -count=1 -timeout=25m ./...
	$(MAKE) fuzz

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./contract
	$(GO) test -run='^$$' -fuzz='^FuzzParseManifest$$' -fuzztime=$(FUZZTIME) ./abi
	$(GO) test -run='^$$' -fuzz='^FuzzParseCases$$' -fuzztime=$(FUZZTIME) ./host/plugintest
	$(GO) test -run='^$$' -fuzz='^FuzzObservationJSON$$' -fuzztime=$(FUZZTIME) ./abi
	$(GO) test -run='^$$' -fuzz='^FuzzValidate$$' -fuzztime=$(FUZZTIME) ./internal/jsonschema
	$(GO) test -run='^$$' -fuzz='^FuzzCanonical$$' -fuzztime=$(FUZZTIME) ./abi/guest/canonical
	$(GO) test -run='^$$' -fuzz='^FuzzInstrument$$' -fuzztime=$(FUZZTIME) ./host/internal/meter
	$(GO) test -run='^$$' -fuzz='^FuzzSplitSelection$$' -fuzztime=$(FUZZTIME) ./host

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(WASM_ENV) $(GO) vet ./abi/...
	@cp go.mod /tmp/warden.go.mod.bak && cp go.sum /tmp/warden.go.sum.bak; \
	$(GO) mod tidy; \
	if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changes go.mod/go.sum:"; git --no-pager diff -- go.mod go.sum; \
		cp /tmp/warden.go.mod.bak go.mod; cp /tmp/warden.go.sum.bak go.sum; exit 1; fi
	$(MAKE) test

# Benchmarks: each speed claim is a ratio measured side by side in one run.
# BenchmarkMetering, BenchmarkStopLateness and BenchmarkGCPause compare the
# metering with no check and with close-on-context-done.
# BenchmarkChain prints the chain's medians native and wasm, calls/s with 4
# callers and the per-guard split; BenchmarkModules each first-party module's
# size, cold load time and instance memory, built from this tree (the one
# first-party module) and from BENCH_BASE (a git revision, unpacked into a
# temporary directory) in the same run, and every slot loaded on one host.
BENCH_BASE ?= main
bench: plugins
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 -timeout=30m ./host/ ./internal/jsonschema/
	$(GO) test -run='^$$' -bench='BenchmarkChain$$' -benchtime=2000x -count=1 -timeout=30m ./internal/chain/
	@base=$$(mktemp -d) && git archive $(BENCH_BASE) | tar -x -C $$base && \
	WARDEN_BENCH_BASE=$$base $(GO) test -run='^$$' -bench='BenchmarkModules$$' -benchtime=1x -count=1 -timeout=30m ./internal/firstparty/; \
	rc=$$?; rm -rf $$base; exit $$rc

# Where the wasm guests' time goes: BenchmarkChain's wasm loop with every
# guest function timed (host.GuestProfile), written as a pprof profile; the
# top functions, then each guard's share and the guests' allocation and
# GC, per call. The listener slows the guests: read shares, not times.
PROFILE_CALLS ?= 300
profile:
	@mkdir -p bin
	$(GO) test ./internal/chain/ -run='^$$' -bench='BenchmarkChain$$/^wasm$$' -benchtime=$(PROFILE_CALLS)x -count=1 \
		-args -guestprofile=$(CURDIR)/bin/guest.pprof
	$(GO) tool pprof -top -nodecount=40 -sample_index=time bin/guest.pprof
	@echo "--- per guard, allocation and GC inside the guests (cumulative, over $(PROFILE_CALLS) calls)"
	@$(GO) tool pprof -top -cum -nodecount=1000 -sample_index=time bin/guest.pprof 2>/dev/null | \
		grep -E ' [a-z]+@[0-9.]+$$| runtime\.(mallocgc|growslice|gcAssistAlloc|deductSweepCredit|gcMarkDone|gcStart|gcBgMarkWorker|bgsweep)$$'

# Memory as tenants grow: a real warden serve on its default instance
# budget, 1, 100 and 1,000 tenants each sending one message, then idle
# (docs/BENCHMARKS.md). WARDEN_BENCH_IDLE sets the idle time (default 5s).
bench-tenants:
	WARDEN_BENCH_TENANTS=1 $(GO) test -count=1 -run='^TestTenantsMemoryScale$$' -v -timeout=60m ./cmd/warden/

# The main job on embedded defaults: a website-creation task against the
# example MCP server, with the scripted model (examples/scenarios/demo).
# The first-party plugins run as wasm; on a fresh clone warden builds them
# into its cache first (once per change of their sources).
demo:
	$(GO) run ./cmd/warden run examples/scenarios/demo/website.yaml

# A tour of the foundation: skill store, a wasm guard, a hostile guard.
quickstart:
	$(GO) run ./examples/quickstart

clean:
	rm -rf bin
