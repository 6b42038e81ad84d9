# KIP-932 share-group figures (docs/performance.md, "Share groups"): not part of `make test`.
.PHONY: bench-share bench-share-memory bench-pop
# Consume throughput with 1, 4 and 16 KafkaShareConsumers on one partition, gateway vs Kafka share groups.
bench-share: setup
	$(PY) -m bench.share_bench $(SHARE_BENCH_ARGS)

# Pop-engine heap for 1 M pending (acquired, not acknowledged) records, and for the default window.
bench-share-memory: install
	$(PY) -m bench.share_memory $(SHARE_MEMORY_ARGS)

# POP consumption with the stock Java push consumer, gateway vs RocketMQ 5.5, plus gateway CPU per 10 000
# messages (docs/pop-benchmark.md); POP_BENCH_ARGS="--trees OLD,NEW" compares checkouts.
bench-pop: setup
	$(PY) -m bench.pop_bench --java 20000 --rounds 3 $(POP_BENCH_ARGS)
