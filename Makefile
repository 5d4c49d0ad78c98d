# pluginhost. `make run` starts the agent with the demo plugin on a temporary
# data dir; `make test` runs everything CI runs. Go is needed, and for the web
# UI's tests Debian's Chromium, which `make test` installs (browser); every
# other tool the tests use is a Go module fetched by the go command itself.

GO       ?= go
BIN      := $(CURDIR)/bin
PKGS     := ./...
# The Go client (api/) is a module of its own, which ./... does not reach:
# vet, unit and fuzz run in it too.
API      := api
FUZZTIME ?= 1m

.PHONY: all build run test lint vet fmt-check unit cross portable fuzz bench chaos clean generate browser screenshots

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/pluginhost ./cmd/pluginhost-logmon ./cmd/pluginhost-nsexec ./plugins/mockcsi ./plugins/kv
	# go-plugin's whole examples directory, from the module cache: the
	# tests run each plugin as a pluginhost task (examples/go-plugin/).
	# Each is named as its README builds it; several share a package name.
	$(GO) build -o $(BIN)/ github.com/hashicorp/go-plugin/examples/grpc/plugin-go-grpc \
		github.com/hashicorp/go-plugin/examples/grpc/plugin-go-netrpc
	$(GO) build -o $(BIN)/greeter github.com/hashicorp/go-plugin/examples/basic/plugin
	$(GO) build -o $(BIN)/counter-go-grpc github.com/hashicorp/go-plugin/examples/bidirectional/plugin-go-grpc
	$(GO) build -o $(BIN)/kv-plugin github.com/hashicorp/go-plugin/examples/negotiated/plugin-go
	$(GO) build -o $(BIN)/streamer github.com/hashicorp/go-plugin/examples/streaming/plugin
	# Our consumer of the bidirectional example (reattached, broker callbacks).
	$(GO) build -o $(BIN)/counter ./examples/go-plugin/counter
	# A stand-in for go-plugin's Python example (which needs grpcio): the
	# same transport, gRPC on a loopback TCP port.
	$(GO) build -o $(BIN)/tcpkv ./internal/tcpkv

# Regenerates the gRPC code of plugins/kv from its .proto (the generated
# files are committed; this is not part of `make test`), and checks the
# code `pluginhost plugin init` writes against buf's. buf compiles the
# .proto in pure Go, so no protoc is needed; all three tools are Go modules
# at pinned versions, installed into bin/.
BUF_VERSION                ?= v1.75.0
PROTOC_GEN_GO_VERSION      ?= v1.36.12
PROTOC_GEN_GO_GRPC_VERSION ?= v1.5.1

generate:
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	cd plugins/kv && PATH="$(BIN):$$PATH" buf generate
	# `pluginhost plugin init` writes generated code from templates (so
	# that neither it nor `make test` runs buf): it must be byte for byte
	# what buf makes from the skeleton's own .proto.
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) run ./cmd/pluginhost plugin init -dir "$$tmp/init" -module example.com/skel skel >/dev/null && \
	cp -r "$$tmp/init" "$$tmp/buf" && rm "$$tmp"/buf/skelpb/*.go && \
	(cd "$$tmp/buf" && PATH="$(BIN):$$PATH" buf generate) && \
	diff -r "$$tmp/init/skelpb" "$$tmp/buf/skelpb" && echo "plugin init: generated code matches buf's"

run: build
	PATH="$(BIN):$$PATH" $(BIN)/pluginhost agent -dev

# Exploratory fuzzing is not part of `make test`: a new finding would turn CI
# red at random. `go test` replays every fuzz target's seed corpus and the
# saved findings under testdata/fuzz, so a bug once found stays covered.
test: lint cross build browser unit portable

# The web UI is tested in a real browser: Debian's Chromium, installed here
# when missing (CI runs as root on a Debian machine). The UI's tests fail
# rather than skip when make runs them (PLUGINHOST_REQUIRE_BROWSER).
CHROMIUM ?= /usr/bin/chromium

browser:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the UI's tests"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null || \
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }; }
	@$(CHROMIUM) --version

# The README's screenshots, taken by the UI's browser tests.
screenshots: build browser
	PLUGINHOST_TEST_BIN_DIR=$(BIN) PLUGINHOST_SCREENSHOTS=$(CURDIR)/docs/screenshots \
		$(GO) test -count=1 -run '^TestUIWalksEveryPage$$' ./e2e

lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	cd $(API) && $(GO) vet ./...

unit: build browser
	PLUGINHOST_TEST_BIN_DIR=$(BIN) PLUGINHOST_REQUIRE_BROWSER=1 $(GO) test -race -count=1 -timeout 12m $(PKGS)
	cd $(API) && $(GO) test -race -count=1 -timeout 5m ./...

# What other programs import (the client module, the sdk, the registry)
# must build wherever go-plugin runs; the agent itself is Linux-only.
# `go vet` also type-checks each system's test files and the sdk's test
# programs, which are not built here: linking four binaries per system
# would cost more than the rest together.
CROSS_BUILD   := ./sdk ./sdk/sdkcsi ./sdk/sdktest ./dynamic
CROSS_VET     := ./sdk/... ./dynamic/...
CROSS_TARGETS ?= darwin/amd64 darwin/arm64 windows/amd64 linux/arm64

cross:
	@set -e; for t in $(CROSS_TARGETS); do \
		echo "cross $$t"; \
		export GOOS=$${t%/*} GOARCH=$${t#*/}; \
		$(GO) build $(CROSS_BUILD); \
		$(GO) vet $(CROSS_VET); \
		(cd $(API) && $(GO) build ./... && $(GO) vet ./...); \
	done
	$(GO) vet -tags portable $(CROSS_VET)
	cd $(API) && $(GO) vet -tags portable ./...

# The code macOS runs where Linux has something better (the api's process
# watch by kill(pid, 0) instead of a pidfd, the sdk's stdio kept as it is),
# selected on Linux by the portable tag and run here: the api's and the
# sdk's tests, and the reattach follower against a real agent and real
# go-plugin plugins.
portable: build
	cd $(API) && $(GO) test -race -count=1 -tags portable ./...
	$(GO) test -race -count=1 -tags portable ./sdk/...
	PLUGINHOST_TEST_BIN_DIR=$(BIN) $(GO) test -race -count=1 -tags portable -run '^TestReattachFollower' ./host/

fuzz:
	@for target in $$(grep -l '^func Fuzz' $$(git ls-files '*_test.go') 2>/dev/null | xargs -r -n1 dirname | sort -u); do \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$target/*_test.go | sed 's/func //'); do \
			echo "fuzz $$target $$f ($(FUZZTIME))"; \
			(cd $$target && $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) .) || exit 1; \
		done; \
	done

bench: build
	PLUGINHOST_TEST_BIN_DIR=$(BIN) $(GO) test -run='^$$' -bench=. -benchmem -timeout 30m $(PKGS)

# The long chaos run. `make test` runs TestChaos too, for a few rounds; this
# one counts failures instead of stopping at the first (KEEPGOING=false to
# stop) so that its figures say how often each check fails.
SEED      ?= 1
ROUNDS    ?= 100
KEEPGOING ?= true

chaos: build
	PLUGINHOST_TEST_BIN_DIR=$(BIN) $(GO) test ./e2e -run '^(TestChaos|TestVolumeClaimChaos)$$' -count=1 -v -timeout 3h \
		-chaos.seed=$(SEED) -chaos.rounds=$(ROUNDS) -chaos.keepgoing=$(KEEPGOING)

clean:
	rm -rf $(BIN)
