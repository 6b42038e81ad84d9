# The fault harness (tests/faults, docs/faults.md): one etcd and three gateways in network namespaces
# under a seeded nemesis, an idempotent acks=all producer, a checker. Needs root and `ip` (iproute2).
# A few minutes; rewrites docs/faults.md. FAULTS_ARGS="--seed N --rounds R" reruns a schedule exactly.
FAULTS_ARGS ?=
.PHONY: faults faults-tools
faults-tools:
	@command -v ip >/dev/null || { apt-get update -q && apt-get install -y -q iproute2; }

SETUP_TARGETS += faults-tools

faults: setup
	$(PY) tests/faults/run.py $(FAULTS_ARGS)
