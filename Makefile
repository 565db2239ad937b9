# Sluice's menu. `make` or `make help` lists the targets; each target's `## ` comment is
# its line in that list.

export PATH := /usr/local/go/bin:$(PATH)

GO          ?= go
TAGS        ?= invariants
# A hang guard per test binary, not a speed check: the sim package takes ~2 min on an
# idle 2-core machine and over 10 min at a load average of 16.
TESTTIMEOUT ?= 25m
SEEDS       ?= 1..1000
FUZZTIME    ?= 30s
DATA        ?= ./data
CLUSTERDATA ?= ./data-cluster

.DEFAULT_GOAL := help
.PHONY: help run cluster build test sim mutants fuzz bench lint fmt cover clean

help: ## list these targets
	@echo "usage: make <target> [VAR=value]"
	@echo
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-7s %s\n", $$1, $$2}' \
		$(MAKEFILE_LIST)
	@echo
	@echo "variables: SEEDS=$(SEEDS) FUZZTIME=$(FUZZTIME) DATA=$(DATA) CLUSTERDATA=$(CLUSTERDATA) TESTTIMEOUT=$(TESTTIMEOUT)"

run: ## start a node on 127.0.0.1:9092 with its data in ./data (Ctrl-C stops it)
	$(GO) run ./cmd/sluice node --id 1 --listen 127.0.0.1:9092 --data $(DATA)

cluster: build ## start 3 nodes on 127.0.0.1:9092-9094, data in ./data-cluster (Ctrl-C stops them)
	bin/sluice dev --nodes 3 --data $(CLUSTERDATA) --base-port 9092

build: ## build bin/sluice
	$(GO) build -o bin/sluice ./cmd/sluice

# Packages whose own goroutines (connection readers and writers, the event loop, fsync
# workers, the handle cache, pooled codecs, the raft metadata quorum and its store) run
# again under the race detector.
RACEPKGS    ?= ./net/ ./runtime/ ./runtime/raftmeta/ ./disk/ ./disk/raftstore/ ./compress/

# The few planted bugs (core/mutant) make test requires the simulator to catch on a few
# seeds; `make mutants` runs the whole catalogue before a release.
MUTANTSUBSET ?= broker/ack-before-fsync,replica/read-past-hwm,disk/offset-index-next,batch/trailing-ok,group/stale-commit

# -count=1: every run runs every test. Go caches passing results by the test binary and
# the files it read, so a second `make test` of the same tree only re-ran the tests that
# read changing files (e2e, the simulator's temp dirs): a green run proved nothing new.
test: ## vet, every test with invariants on (lint rules, simulator seeds), then -race where goroutines live
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet -tags $(TAGS),sluice_mutants ./...
	$(GO) test -count=1 -tags $(TAGS) -timeout $(TESTTIMEOUT) ./...
	$(GO) test -count=1 -race -tags $(TAGS) -timeout $(TESTTIMEOUT) $(RACEPKGS)
	$(GO) run -tags $(TAGS),sluice_mutants ./cmd/sluice mutants --seeds 1..20 --unit=false \
		--baseline=false --require-caught --only $(MUTANTSUBSET)

sim: ## run simulator seeds: make sim SEEDS=1..1000
	$(GO) run -tags $(TAGS) ./cmd/sluice sim --seeds $(SEEDS)

mutants: SEEDS = 1..200
mutants: ## planted bugs (core/mutant): simulator SEEDS=1..200 and unit tests per mutant, table
	$(GO) run -tags $(TAGS),sluice_mutants ./cmd/sluice mutants --seeds $(SEEDS)

fuzz: ## run every FuzzXxx target for FUZZTIME each (default 30s)
	FUZZTIME=$(FUZZTIME) TAGS=$(TAGS) bash scripts/fuzz.sh

bench: ## produce/consume benchmark against a local node, then the peer benchmarks
	bash scripts/bench.sh

lint: ## gofmt check, go vet, and staticcheck when it can be fetched
	bash scripts/lint.sh

fmt: ## gofmt every Go file in place
	gofmt -l -w .

cover: ## tests with coverage; writes bin/cover.out and prints the total
	@mkdir -p bin
	$(GO) test -tags $(TAGS) -timeout $(TESTTIMEOUT) -coverprofile=bin/cover.out ./...
	$(GO) tool cover -func=bin/cover.out | tail -n 1
	@echo "HTML view: go tool cover -html=bin/cover.out"

clean: ## remove build output and simulator failure folders (never ./data)
	rm -rf bin sim-failures
