# `make soak`: 50 cycles of kill -9 under Kafka (idempotent, acks=all) and RocketMQ (SYNC) produce
# load (tests/robustness/soak.py); writes its report to docs/robustness.md. Not part of `make test`
# (tests/robustness/test_soak.py runs 3 cycles there).
SOAK_CYCLES ?= 50
SOAK_SEED ?= 18
.PHONY: soak
soak: install
	$(PY) -m tests.robustness.soak --cycles $(SOAK_CYCLES) --seed $(SOAK_SEED) --write-docs

# `make bench-pressure`: librdkafka produce/consume throughput with 5 000 idle and 200 slowloris
# connections held open, against the same gateway without them (bench/pressure.py; also rows of the
# full `make bench`); writes its figures to docs/robustness.md.
PRESSURE_ROUNDS ?= 9
.PHONY: bench-pressure
bench-pressure: setup
	$(PY) -m bench.pressure --rounds $(PRESSURE_ROUNDS) --write-docs

# `make bench-topics`: CreateTopics latency (one topic per request, one connection) on a gateway
# already holding 500 ... 10 000 topics, this tree against TOPICS_BEFORE in alternating rounds, then
# 10 000 topics created one by one and the restart times, and 5 000 topics auto-created through
# Metadata on both trees (bench/topic_scale.py); writes its figures to docs/robustness.md.
TOPICS_BEFORE ?= /work/main
TOPICS_ROUNDS ?= 2
.PHONY: bench-topics
bench-topics: install
	$(PY) -m bench.topic_scale --before $(TOPICS_BEFORE) --rounds $(TOPICS_ROUNDS) --write-docs
