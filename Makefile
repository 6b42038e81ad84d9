# Two entry points for users: `make run` and `make test` (see README).
# Each area adds its own set-up steps in mk/*.mk by appending to SETUP_TARGETS.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SETUP_TARGETS :=

.PHONY: run test install setup bench
.DEFAULT_GOAL := test

$(VENV)/.installed: pyproject.toml
	@echo "  python venv in $(VENV) ..."
	$(PYTHON) -m venv $(VENV)
	@echo "  pip upgrade ..."
	$(PY) -m pip install -q --upgrade pip
	@echo "  pip install -e '.[test,spark,bench]' (Kafka/RocketMQ clients, PySpark, test tools: a few minutes the first time) ..."
	$(PY) -m pip install -q -e '.[test,spark,bench]'
	touch $@

# The venv with the project's Python packages, as one step of install, run and setup.
.PHONY: python-packages
python-packages: $(VENV)/.installed

install:
	+@$(call run_steps,python-packages)

# Runs make targets one after another with one progress line each: "[2/9] bench-jars ..." before one that
# has work to do, "[2/9] bench-jars ok" for one already done (`make -n` has nothing to run). Under
# `make -n` (a dry run) the lines print and each step's commands are only shown.
define run_steps
n=0; for t in $(1); do n=$$((n+1)); \
  if [ -z "$$($(MAKE) -s -n --no-print-directory $$t 2>/dev/null | grep -v 'Nothing to be done')" ]; then \
    echo "[$$n/$(words $(1))] $$t ok"; \
  else echo "[$$n/$(words $(1))] $$t ..."; $(MAKE) -s --no-print-directory $$t || exit 1; fi; done
endef

include $(wildcard mk/*.mk)

setup:
	+@$(call run_steps,python-packages $(SETUP_TARGETS))

# One gateway shard per usable core (`--shards auto`, docs/shards.md): the bootstrap ports stay 9092 and
# 9876 (shard 0's), the other shards' ports come from Metadata and the route data. The shards' supervisor
# runs a private etcd for their membership, so etcd is installed as a step (cluster-etcd, mk/cluster.mk).
# The schema registry (Confluent's REST API, docs/schema-registry.md) on 8081, as Confluent's own default;
# the dashboard, /metrics and health checks (docs/admin.md) on 8080. ARGS: any more gateway flags
# (`make run ARGS="--grpc-port 8181"`, `make run ARGS="--shards 1"` for one process); a flag given again
# in ARGS wins.
run:
	+@$(call run_steps,python-packages native cluster-etcd)
	$(PY) -m gateway --shards auto --data-dir ./data --schema-registry-port 8081 --http-port 8080 $(ARGS)

# The long cases listed in tests/long_tests.txt run in `make test-long` (mk/long.mk), not here.
test: setup
	$(PY) -m pytest -m "not long" $(PYTEST_ARGS)

bench: setup
	$(PY) -m bench $(BENCH_ARGS)
