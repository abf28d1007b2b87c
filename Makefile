# Granary: build, test and benchmark entry points.
SHELL := /bin/bash
GO ?= go
GOPATH := $(shell $(GO) env GOPATH)
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_BIN := $(GOPATH)/bin/minio
export MINIO_BIN

.PHONY: run build deps test unit e2e bench bench-deps device-kit lint fuzz cluster

# build stamps the binary with VERSION (granary --version): the git
# description of the checkout (tag, commits since, hash, -dirty), or
# "devel" outside git. BIN is where the binary goes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
BIN ?= bin/granary

run:
	$(GO) run ./cmd/granary serve

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/granary

# deps installs what the tests need: the MinIO server (cached in GOPATH) and
# the Debian clients for the end-to-end tests.
deps:
	@scripts/deps.sh "$(MINIO_VERSION)" "$(MINIO_BIN)"

test: deps lint unit e2e

# The console's browser tests keep a screenshot of each page they check
# under artifacts/console/ (CI's test artifacts; ignored by git). The
# allocation tests run again without -race, under which they skip.
unit:
	GRANARY_CONSOLE_ARTIFACTS=$(CURDIR)/artifacts/console $(GO) test -race -timeout 20m ./...
	$(GO) test -count=1 -run 'Allocs' ./api/sigv4 ./api

e2e: build
	scripts/e2e.sh bin/granary

# cluster runs MinIO and three Granary nodes on loopback in the foreground
# (what docker-compose.yml runs in containers); Ctrl-C stops them.
cluster: build
	scripts/cluster.sh bin/granary

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# fuzz runs each fuzz target for FUZZTIME (the seed corpora run in `unit`).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./api -run '^$$' -fuzz '^FuzzParseRange$$' -fuzztime $(FUZZTIME)
	$(GO) test ./api/sigv4 -run '^$$' -fuzz '^FuzzParseAuthorization$$' -fuzztime $(FUZZTIME)
	$(GO) test ./api/sigv4 -run '^$$' -fuzz '^FuzzChunkedReader$$' -fuzztime $(FUZZTIME)
	$(GO) test ./store/index -run '^$$' -fuzz '^FuzzChunkKey$$' -fuzztime $(FUZZTIME)

# bench-deps installs what `bench` needs beyond deps: nginx (the loadtest's
# proxy_cache reference target) and wrk.
bench-deps:
	@scripts/bench-deps.sh

# The load test for a host without Go (see scripts/device-kit.sh).
device-kit: deps bench-deps
	@scripts/device-kit.sh

bench: deps bench-deps build
	$(GO) run ./loadtest -granary bin/granary
	scripts/warmrig.py granary=bin/granary
	scripts/warmrig.py --client go --shared --sizes 100 --ram 64MiB granary=bin/granary # RAM under the set: disk hits
	$(GO) run ./loadtest -granary bin/granary -scenario bodies
	$(GO) run ./loadtest -granary bin/granary -scenario checkpoint
	$(GO) run ./loadtest -granary bin/granary -scenario checkpoint -origin-payload crc32c -out loadtest/results/checkpoint-crc32c.md
	$(GO) run ./loadtest -granary bin/granary -scenario mount
	$(GO) test -run '^$$' -bench BenchmarkJournalOpen1M -benchtime 3x ./fuse
	$(GO) run ./loadtest -granary bin/granary -scenario epochs
	$(GO) run ./loadtest -granary bin/granary -scenario hdfs-epochs
	$(GO) run ./loadtest -granary bin/granary -scenario cluster
	$(GO) run ./loadtest -granary bin/granary -scenario mount-cluster
	$(GO) test ./cluster/peer -run '^$$' -bench 'BenchmarkAnswerMAC|BenchmarkGetChunk' -benchtime 2s
	$(GO) run ./loadtest -granary bin/granary -scenario tls
	$(GO) run ./loadtest -granary bin/granary -scenario origin-faults
	$(GO) test ./api -run '^$$' -bench BenchmarkListCatalog1M -benchtime 1x
	$(GO) test ./store/origin/hdfs -run '^$$' -bench BenchmarkListOverSlowLink -benchtime 3x
	$(GO) test ./api/sigv4 -run '^$$' -bench 'BenchmarkVerify' -benchmem -benchtime 2s
	$(GO) test ./gateway -run '^$$' -bench BenchmarkMetaGet -cpu 1,$$(nproc) -benchtime 2s
	$(GO) test ./api -run '^$$' -bench BenchmarkRequestContext -cpu 1,$$(nproc) -benchtime 2s
