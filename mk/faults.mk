# The fault harness (tests/faults, docs/faults.md): one etcd and three gateways in network namespaces
# under a seeded nemesis (partitions, one-way drops, a lossy slow reordering link, pauses, kill -9, clock
# jumps through libfaketime, a full disk on a tmpfs), workloads and checkers. Needs root, `ip`/`tc`
# (iproute2), iptables, Debian's faketime and a C compiler (the fsync-error shim, tests/faults/fsync_fault.c), a JDK
# and the Maven jars (the Java workloads) and Go (the linearizability checker, below). A few minutes; rewrites docs/faults.md.
# FAULTS_ARGS="--seed N --rounds R" reruns a schedule exactly.
FAULTS_ARGS ?=
.PHONY: faults faults-long faults-tools
faults-tools:
	@command -v ip >/dev/null && command -v tc >/dev/null && command -v iptables >/dev/null \
		&& command -v cc >/dev/null && test -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 \
		|| { apt-get update -q && apt-get install -y -q iproute2 iptables faketime gcc libc6-dev; }

SETUP_TARGETS += faults-tools

# The linearizability checker of the metadata history (tests/faults/lincheck: porcupine from the Go
# module proxy, pinned by its go.sum), built into a cache outside the clone under a name keyed by its
# sources' hash (tests/faults/linearizable.py finds it so, and runs this target when it is missing).
# Prints the binary's path.
LINCHECK_CACHE ?= $(HOME)/.cache/rocketgate/lincheck
LINCHECK_SRC := tests/faults/lincheck
.PHONY: faults-lincheck
faults-lincheck:
	@command -v go >/dev/null || { apt-get update -q && apt-get install -y -q golang-go; }
	@bin=$(LINCHECK_CACHE)/lincheck-$$(cat $(LINCHECK_SRC)/main.go $(LINCHECK_SRC)/go.mod $(LINCHECK_SRC)/go.sum \
		| sha256sum | cut -c1-16); test -x $$bin || { mkdir -p $(LINCHECK_CACHE) && cd $(LINCHECK_SRC) \
		&& GOFLAGS=-mod=mod go build -o $$bin.tmp . && mv $$bin.tmp $$bin; } && echo $$bin

SETUP_TARGETS += faults-lincheck

faults: setup
	$(PY) tests/faults/run.py $(FAULTS_ARGS)

# The long schedule of issue 26: every fault class at least 5 times (50 faults, about 28 minutes).
faults-long: setup
	$(PY) tests/faults/run.py --rounds 50 $(FAULTS_ARGS)
