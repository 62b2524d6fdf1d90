# The aiusage kit. Run `make` (or `make help`) for the targets.

GO          ?= go
BIN         ?= bin/aiusage
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -X github.com/aiusage/kit/internal/cli.version=$(VERSION) -X github.com/aiusage/kit/internal/cli.commit=$(COMMIT)
# DIST is where make dist writes the binaries of DIST_PLATFORMS (GOOS/GOARCH)
# and their SHA256SUMS.
DIST        ?= dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
REDOCLY     ?= @redocly/cli@2.77.0
OPENAPI     := spec/openapi/usage.yaml spec/openapi/organisation.yaml spec/openapi/review.yaml
BENCHTIME   ?= 1s
# RACEFLAGS are more flags of make test-race (CI passes -short: the tests
# that build and run the binary, which the race detector does not watch, and
# those whose time goes into real-time waits or large sizes skip or shrink;
# make test runs them whole).
RACEFLAGS   ?=

.DEFAULT_GOAL := help

.PHONY: help build dist run test test-race bench soak scale lint tidy screenshots

help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the aiusage binary into bin/
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/aiusage

dist: ## static binaries for linux, darwin, windows on amd64, arm64 in dist/, version stamped, with SHA256SUMS
	mkdir -p $(DIST)
	rm -f $(DIST)/aiusage-* $(DIST)/SHA256SUMS
	set -e; for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; if [ "$$os" = windows ]; then ext=.exe; fi; \
		echo "$(DIST)/aiusage-$(VERSION)-$$os-$$arch$$ext"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS) -s -w" \
			-o $(DIST)/aiusage-$(VERSION)-$$os-$$arch$$ext ./cmd/aiusage; \
	done
	cd $(DIST) && sha256sum aiusage-* > SHA256SUMS

run: build ## build and run the whole kit on embedded SQLite (aiusage demo)
	./$(BIN) demo

test: ## run every test (PostgreSQL tests run when AIUSAGE_TEST_DATABASE_URL is set)
	$(GO) test -count=1 ./...

test-race: ## run every test with the race detector
	$(GO) test -count=1 -race -timeout 30m $(RACEFLAGS) ./...

bench: ## run the benchmarks
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

soak: ## soak tests: a normal client beside hostile ones, and the memory of each hostile path, on SQLite (and PostgreSQL with AIUSAGE_TEST_DATABASE_URL); SOAK=REGEXP picks tests; SOAK_REPORT=FILE saves the figures
	AIUSAGE_SOAK=1 $(if $(SOAK_REPORT),AIUSAGE_SOAK_REPORT=$(abspath $(SOAK_REPORT))) $(GO) test -count=1 -v -timeout 60m -run '$(or $(SOAK),^TestSoak)' ./internal/cli/

scale: ## scale test: the real binaries over SCALE (default 1000000) and SCALE/10 conversations, on SQLite (and PostgreSQL with AIUSAGE_TEST_DATABASE_URL); SCALE_REPORT=FILE saves the figures
	AIUSAGE_SCALE=$(or $(SCALE),1000000) $(if $(SCALE_REPORT),AIUSAGE_SCALE_REPORT=$(abspath $(SCALE_REPORT))) $(GO) test -count=1 -v -timeout 60m -run '^TestScale$$' ./internal/cli/

screenshots: ## save a PNG of each main dashboard page into docs/screenshots (needs chromium)
	AIUSAGE_REQUIRE_CHROMIUM=1 AIUSAGE_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run '^TestBrowser' ./internal/app/dashboard/

lint: ## gofmt, go vet, staticcheck and the OpenAPI lint (Redocly CLI, needs npm)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_COLOR=1 npx --yes $(REDOCLY) lint --config spec/openapi/redocly.yaml $(OPENAPI)

tidy: ## go mod tidy and verify
	$(GO) mod tidy
	$(GO) mod verify
