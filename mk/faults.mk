# The fault harness (tests/faults, docs/faults.md): one etcd and three gateways in network namespaces
# under a seeded nemesis (partitions, one-way drops, a lossy slow reordering link, pauses, kill -9, clock
# jumps through libfaketime, a full disk on a tmpfs), workloads and checkers. Needs root, `ip`/`tc`
# (iproute2), iptables, Debian's faketime and a C compiler (the fsync-error shim, tests/faults/fsync_fault.c), a JDK
# and the Maven jars (the Java workloads) and Go (the linearizability checker and the Go RocketMQ workload, below).
# `make faults` runs issue 26's bounded schedule (50 faults, every class 5 times, every workload: about 31
# minutes); `make faults-short` a 9-fault one (a few minutes). Both rewrite docs/faults.md.
# FAULTS_ARGS="--seed N --rounds R" reruns a schedule exactly.
FAULTS_ARGS ?=
.PHONY: faults faults-short faults-tools
faults-tools:
	@command -v ip >/dev/null && command -v tc >/dev/null && command -v iptables >/dev/null \
		&& command -v cc >/dev/null && test -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 \
		|| { apt-get update -q && apt-get install -y -q iproute2 iptables faketime gcc libc6-dev; }

SETUP_TARGETS += faults-tools

# The Go programs of the harness, each built from the Go module proxy (pinned by its go.sum) into a cache
# outside the clone under a name keyed by its sources' hash (tests/faults/gobuild.py finds them so, and
# runs their target when one is missing); each target prints the binary's path.
# $(call faults-go,NAME,CACHE): tests/faults/NAME -> CACHE/NAME-<hash>
define faults-go
	@command -v go >/dev/null || { apt-get update -q && apt-get install -y -q golang-go; }
	@bin=$(2)/$(1)-$$(cat tests/faults/$(1)/main.go tests/faults/$(1)/go.mod tests/faults/$(1)/go.sum \
		| sha256sum | cut -c1-16); test -x $$bin || { mkdir -p $(2) && cd tests/faults/$(1) \
		&& GOFLAGS=-mod=mod go build -o $$bin.tmp . && mv $$bin.tmp $$bin; } && echo $$bin
endef

# The linearizability checker of the metadata history (tests/faults/lincheck: porcupine).
LINCHECK_CACHE ?= $(HOME)/.cache/rocketgate/lincheck
.PHONY: faults-lincheck
faults-lincheck:
	$(call faults-go,lincheck,$(LINCHECK_CACHE))

# The Go RocketMQ workload (tests/faults/rmqgo: apache/rocketmq-client-go v2, tests/faults/go_load.py).
RMQGO_CACHE ?= $(HOME)/.cache/rocketgate/rmqgo
.PHONY: faults-rmqgo
faults-rmqgo:
	$(call faults-go,rmqgo,$(RMQGO_CACHE))

SETUP_TARGETS += faults-lincheck faults-rmqgo

# Issue 26's bounded schedule: every fault class 5 times (50 faults, run.py's default), every default workload.
faults: setup
	$(PY) tests/faults/run.py $(FAULTS_ARGS)

# A short schedule (9 faults, a few minutes): a quick look, not the issue's check.
faults-short: setup
	$(PY) tests/faults/run.py --rounds 9 $(FAULTS_ARGS)

# Issue 28's diskless workloads (tests/faults/diskless.py: a diskless topic over one bucket of a real
# SeaweedFS server on the harness's bridge) under kill -9, pauses and partitions; not in `make faults`'s
# default list (docs/faults.md, "diskless"). Its own report file, so docs/faults.md's latest run stays.
.PHONY: faults-diskless
faults-diskless: setup
	$(PY) tests/faults/run.py --workloads diskless,diskless-rocketmq --faults kill,pause,isolate,cut-from-etcd \
		--rounds 12 --report docs/faults-diskless.md $(FAULTS_ARGS)
