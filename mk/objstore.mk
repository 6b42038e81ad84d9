# The S3-compatible server the tier's tests and benchmarks run against (docs/tiered-storage.md):
# SeaweedFS built from its Go module once and cached outside the clone, keyed by version, as Maven caches
# jars. `go install` refuses the module (its go.mod has replace directives), so it is downloaded with
# `go mod download` and `./weed` built inside it: ~230 MB, 10-20 minutes on 2 cores, once per machine.
# The build goes to a .tmp file renamed at the end, so an interrupted build is never taken as done.
# bench/objstore_server.py reads SEAWEEDFS_VERSION from this file (one place names the version).
SEAWEEDFS_VERSION := v0.0.0-20261109003541-7506e5f91cd6
SEAWEEDFS_CACHE ?= $(HOME)/.cache/rocketgate/seaweedfs
SEAWEEDFS_BIN := $(SEAWEEDFS_CACHE)/$(SEAWEEDFS_VERSION)/weed

.PHONY: objstore-server bench-objstore
objstore-server: $(SEAWEEDFS_BIN)

$(SEAWEEDFS_BIN):
	@command -v go >/dev/null || { apt-get update -q && apt-get install -y -q golang-go; }
	mkdir -p $(@D)
	dir=$$(cd /tmp && GOFLAGS=-mod=mod GOTOOLCHAIN=auto go mod download -json github.com/seaweedfs/seaweedfs@$(SEAWEEDFS_VERSION) \
		| $(PYTHON) -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') && \
	cd "$$dir" && GOFLAGS=-mod=mod GOTOOLCHAIN=auto go build -o $@.tmp ./weed
	mv $@.tmp $@

SETUP_TARGETS += objstore-server

# The server's own PUT/GET rates (1/4/16 MiB objects) the tier's upload throughput is compared with.
bench-objstore: setup
	$(PY) -m bench.objstore $(OBJSTORE_BENCH_ARGS)
