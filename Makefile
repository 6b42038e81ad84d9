# Two entry points for users: `make run` and `make test` (see README).
# Each area adds its own set-up steps in mk/*.mk by appending to SETUP_TARGETS.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SETUP_TARGETS :=

.PHONY: run test install setup bench
.DEFAULT_GOAL := test

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark,bench]'
	touch $@

install: $(VENV)/.installed

include $(wildcard mk/*.mk)

setup: install $(SETUP_TARGETS)

# The schema registry (Confluent's REST API, docs/schema-registry.md) on 8081, as Confluent's own default;
# the dashboard, /metrics and health checks (docs/admin.md) on 8080. ARGS: any more gateway flags
# (`make run ARGS="--grpc-port 8181"`); a flag given again in ARGS wins.
run: install native
	$(PY) -m gateway --data-dir ./data --schema-registry-port 8081 --http-port 8080 $(ARGS)

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

bench: setup
	$(PY) -m bench $(BENCH_ARGS)
