# `make soak`: 50 cycles of kill -9 under Kafka (idempotent, acks=all) and RocketMQ (SYNC) produce
# load (tests/robustness/soak.py); writes its report to docs/robustness.md. Not part of `make test`
# (tests/robustness/test_soak.py runs 3 cycles there).
SOAK_CYCLES ?= 50
SOAK_SEED ?= 18
.PHONY: soak
soak: install
	$(PY) -m tests.robustness.soak --cycles $(SOAK_CYCLES) --seed $(SOAK_SEED) --write-docs
