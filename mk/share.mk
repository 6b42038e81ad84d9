# KIP-932 share-group figures (docs/performance.md, "Share groups"): not part of `make test`.
.PHONY: bench-share bench-share-memory
# Consume throughput with 1, 4 and 16 KafkaShareConsumers on one partition, gateway vs Kafka share groups.
bench-share: setup
	$(PY) -m bench.share_bench $(SHARE_BENCH_ARGS)

# Pop-engine heap for 1 M pending (acquired, not acknowledged) records, and for the default window.
bench-share-memory: install
	$(PY) -m bench.share_memory $(SHARE_MEMORY_ARGS)
