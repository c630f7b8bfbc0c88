# Gantry's one entry point. `make run` and `make test` are the two commands
# a fresh machine needs (see README.md).

SHELL := /bin/bash
GO ?= go
GANTRY_DEV := $(GO) run ./cmd/gantry-dev
MODULE := github.com/gantry-dev/gantry
# Integration and end-to-end tests share one local stack, and its simulated
# GPUs are finite (two H100 nodes): packages whose tests hold 8-GPU jobs
# would starve each other when run side by side, and some restart the API
# server or PostgreSQL. So a test binary holds the stack's test lock from its
# first use of the stack until it exits (stacktest, devcluster.LockForTests):
# binaries take turns on the stack, while -p 2 lets the go tool build (link)
# the next test binaries and run the ones that need no stack beside them.
# The machine is CPU-bound for all of make test, so no work is done twice:
# `make lint` vets every package with its tests already (-vet=off skips go
# test's second, partial vet), and test binaries are linked without DWARF
# (-ldflags=-w; file:line in stacks comes from the pcln table, not DWARF),
# which saves about 3.5 s of CPU of each of the 32 links.
TEST_FLAGS ?= -p 2 -timeout 25m -vet=off -ldflags=-w

.PHONY: run test unit screenshots lint helm-lint generate check-generated cluster-up cluster-down cluster-status bench build clean-local prerequisites

## run: bring up the local stack and the portal on http://127.0.0.1:8080 (Ctrl-C stops what it started)
## It runs the built gantry-dev, not `go run`: on Ctrl-C `go run` exits 1 even when the program it
## ran stopped everything and exited 0, and make then reports the run as failed.
run: prerequisites
	$(GO) build -o .local/bin/gantry-dev ./cmd/gantry-dev
	exec .local/bin/gantry-dev run

## prerequisites: install what the machine lacks (Debian packages, the IdP's npm packages), or name the command that does
prerequisites:
	@deploy/local/prerequisites.sh

## build: build the gantry binary into bin/ (tags as in internal/devcluster/portalbuild.go)
build:
	$(GO) build -tags nomsgpack -o bin/gantry ./cmd/gantry

# ISOLATED_TESTS start whole stacks of their own, each in a network namespace
# of its own (internal/devcluster's isolatedStack): they share nothing with the
# local stack the other tests use, so they run beside those instead of after
# them. They are most of devcluster's five minutes. The browser tests (./e2e)
# likewise run on a stack of their own (deploy/local/on-own-stack.sh), beside
# the rest.
ISOLATED_TESTS = ^(TestStackUpAndDownTenTimesColdCacheBusyCores|TestFailedUpLeavesNothingAndNamesTheCause)$$
# LATER_STACK_PACKAGES run on a stack of their own too, once the isolated
# tests are done (deploy/local/on-own-stack.sh), so that the lane of the
# shared stack, the longest, is not longer than the other two.
LATER_STACK_PACKAGES = ./internal/queue
# Every test's events, for the slowest-tests summary at the end of make test.
TEST_JSON := .local/test-events.json
ISOLATED_JSON := .local/test-events-isolated.json
LATER_JSON := .local/test-events-later.json
E2E_JSON := .local/test-events-e2e.json
GOTESTSUM := $(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg

## test: everything CI runs: generated code fresh, linters, unit, integration and browser tests
# The browser tests and LATER_STACK_PACKAGES run in network namespaces with
# only loopback (on-own-stack.sh): gotestsum is fetched and built before
# them, or on a fresh module cache they could not download it.
test: prerequisites check-generated lint helm-lint
	$(GO) tool gotestsum --version > /dev/null
	$(GANTRY_DEV) up
	cd deploy/local/idp && npm test
	@mkdir -p .local; \
	{ $(GOTESTSUM) --jsonfile $(ISOLATED_JSON) -- $(TEST_FLAGS) -run '$(ISOLATED_TESTS)' ./internal/devcluster; first=$$?; \
	  deploy/local/on-own-stack.sh later-stack $(GOTESTSUM) --jsonfile $(LATER_JSON) -- $(TEST_FLAGS) $(LATER_STACK_PACKAGES); \
	  [ $$? -eq 0 ] && [ $$first -eq 0 ]; } > .local/test-isolated.log 2>&1 & isolated=$$!; \
	deploy/local/on-own-stack.sh e2e-stack $(GOTESTSUM) --jsonfile $(E2E_JSON) -- $(TEST_FLAGS) ./e2e \
		> .local/test-e2e.log 2>&1 & e2e=$$!; \
	$(GOTESTSUM) --jsonfile $(TEST_JSON) -- $(TEST_FLAGS) -skip '$(ISOLATED_TESTS)' $$($(GO) list ./... | grep -v '/e2e$$' | grep -v -x -F $(LATER_STACK_PACKAGES:./%=-e $(MODULE)/%)); status=$$?; \
	wait $$isolated; isolated_status=$$?; \
	wait $$e2e; e2e_status=$$?; \
	echo "--- tests on stacks of their own (beside the others):"; cat .local/test-isolated.log .local/test-e2e.log; \
	echo "--- slowest tests (over 20s):"; \
	cat $(TEST_JSON) $(ISOLATED_JSON) $(LATER_JSON) $(E2E_JSON) | $(GO) tool gotestsum tool slowest --threshold 20s; \
	[ $$status -eq 0 ] && [ $$isolated_status -eq 0 ] && [ $$e2e_status -eq 0 ]

## unit: the tests that need nothing running (tests of the local stack skip under -short)
unit:
	$(GO) test -short ./...

## lint: gofmt, go vet and staticcheck
lint:
	@files=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^deploy/tools/')); \
	if [ -n "$$files" ]; then echo "gofmt would change:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## helm-lint: helm lint the chart with default and custom values (builds the pinned helm once)
helm-lint:
	$(GO) test -count=1 -run '^TestHelmLint$$' ./deploy/helm/gantry

## screenshots: retake README's screenshot from the running portal (a browser test)
screenshots: prerequisites
	$(GANTRY_DEV) up
	GANTRY_UPDATE_SCREENSHOTS=1 $(GO) test -count=1 -run '^TestReadmeScreenshot' ./e2e

## generate: regenerate templ components
generate:
	$(GO) tool templ generate -path views

## check-generated: fail when committed templ output is stale
check-generated:
	@tmp=$$(mktemp -d); cp -r views $$tmp/; \
	$(GO) tool templ generate -path $$tmp/views >/dev/null 2>&1 || { echo "templ generate failed"; exit 1; }; \
	for f in $$(cd $$tmp && find views -name '*_templ.go'); do \
		cmp -s $$tmp/$$f $$f || { echo "$$f is stale: run make generate and commit"; rm -rf $$tmp; exit 1; }; \
	done; \
	for f in $$(find views -name '*.templ'); do \
		[ -f $${f%.templ}_templ.go ] || { echo "$${f%.templ}_templ.go missing: run make generate"; rm -rf $$tmp; exit 1; }; \
	done; rm -rf $$tmp; echo "templ output is fresh"

## cluster-up / cluster-down / cluster-status: the local Kubernetes stack alone
cluster-up: prerequisites
	$(GANTRY_DEV) up
cluster-down:
	$(GANTRY_DEV) down
cluster-status:
	$(GANTRY_DEV) status

## bench: benchmarks (pages over seeded caches: kube, web), and the load run (e2e BenchmarkLoad):
## 10,000 workloads in three teams, 1,000 admitted and running on 1,000 simulated nodes, 10,000
## ended runs in the ledger; job list, job page, team page and cluster page at 50 concurrent users,
## each signed in through the IdP with a session of their own (p50/p99 ms, beside a live list of
## one team's Workloads from the API server), once with users who pause about a second between
## clicks (think_ms=1000) and once with users who never pause (think_ms=0), and the portal's RSS.
## With users pausing each page is measured a second time with the portal, PostgreSQL and the
## load generator at GANTRY_LOAD_NICE (default -10, needs root) over the simulated cluster (nice=
## in the line). Each page line also says where its slowest 1% of views went (tail_*_ms, from the
## portal's Server-Timing headers) and in how many distinct seconds they came (tail_seconds).
## Sizes: GANTRY_LOAD_WORKLOADS,
## GANTRY_LOAD_RUNNING, GANTRY_LOAD_NODES. The load run is a benchmark only (-run '^$' runs no
## tests), so `go test` never starts it. It prints `BENCH page=... p50_ms=... p99_ms=...` and
## `BENCH rss ...` lines. The launch run (e2e BenchmarkLaunch): 30 users with API tokens of their
## own across the three teams launch through POST /api/v1/teams/{team}/jobs at an open-loop
## GANTRY_LAUNCH_RATE per second (default 55, above the target 50) for GANTRY_LAUNCH_SECONDS (default 60), while a bare
## client-go client creates the same rendered objects as the same users at the same rate:
## `BENCH launch rate_per_s=... p50_ms=... p99_ms=... clientgo_p99_ms=... ratio=... errors=...`,
## then a second round right after with the portal, PostgreSQL and the load generator at
## GANTRY_LOAD_NICE (nice= in the line).
## The soak run (e2e BenchmarkSoak): 200 sessions signed in through the IdP browse the jobs list,
## job pages, team page and cluster page for GANTRY_SOAK_MINUTES (default 10); each has one job of
## its own from the start and about one click in a hundred replaces it (delete, then launch), so the
## cluster keeps its size; the portal's RSS is read each minute: `BENCH soak sessions=200 minutes=10
## errors_5xx=... rss_mib_min2=... rss_mib_end=... rss_growth_pct=...`. Every other benchmark's
## result line is also printed as one `BENCH <name> <key>=<value> ...` line.
bench: prerequisites
	$(GANTRY_DEV) up
	set -o pipefail; GANTRY_LOAD_NICE=$${GANTRY_LOAD_NICE:--10} $(GO) test -run '^$$' -bench . -benchmem -timeout 120m ./... | awk -f e2e/bench-lines.awk

clean-local: cluster-down
	rm -rf .local
