# The fault harness (tests/faults, docs/faults.md): one etcd and three gateways in network namespaces
# under a seeded nemesis (partitions, one-way drops, a lossy slow reordering link, pauses, kill -9, clock
# jumps through libfaketime, a full disk on a tmpfs), workloads and checkers. Needs root, `ip`/`tc`
# (iproute2), iptables, Debian's faketime and a C compiler (the fsync-error shim, tests/faults/fsync_fault.c). A few minutes; rewrites docs/faults.md.
# FAULTS_ARGS="--seed N --rounds R" reruns a schedule exactly.
FAULTS_ARGS ?=
.PHONY: faults faults-long faults-tools
faults-tools:
	@command -v ip >/dev/null && command -v tc >/dev/null && command -v iptables >/dev/null \
		&& command -v cc >/dev/null && test -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 \
		|| { apt-get update -q && apt-get install -y -q iproute2 iptables faketime gcc libc6-dev; }

SETUP_TARGETS += faults-tools

faults: setup
	$(PY) tests/faults/run.py $(FAULTS_ARGS)

# The long schedule of issue 26: every fault class at least 5 times (50 faults, about 28 minutes).
faults-long: setup
	$(PY) tests/faults/run.py --rounds 50 $(FAULTS_ARGS)
