# Reference brokers for `make bench`: Apache Kafka and Apache RocketMQ jars from Maven Central, plus the
# small RocketMQ TPS benchmark class (bench/java/). The stamp makes a repeated `make setup` a no-op.
BENCH_JARS_STAMP := bench/jars/.resolved
BENCH_JAVA_SOURCES := bench/java/pom.xml bench/java/kafka/pom.xml bench/java/rocketmq/pom.xml \
	$(shell find bench/java/rocketmq/src -name '*.java' 2>/dev/null)

.PHONY: bench-jars
bench-jars: $(BENCH_JARS_STAMP)

$(BENCH_JARS_STAMP): $(BENCH_JAVA_SOURCES)
	rm -rf bench/jars/kafka bench/jars/rocketmq
	mvn -q -B -f bench/java/pom.xml package
	touch $@

SETUP_TARGETS += bench-jars

# Single-row benchmarks with their own docs sections (docs/performance.md). bench-flow-control needs
# root for its throttled disk (a loop device with a cgroup v1 blkio limit); without it only the
# fallback rows run.
FLOW_SECONDS ?= 20
.PHONY: bench-flow-control bench-tls
bench-flow-control: setup
	$(PY) -m bench.flow_control $(FLOW_SECONDS)
bench-tls: setup
	$(PY) -m bench.tls $(TLS_BENCH_ARGS)

# Issue 33: the transactional workload under faults, checked for Jepsen's anomaly classes, on the gateway
# and Kafka 4.3.1 with transactions v2 and v1 clients; rewrites docs/transactions-checked.md (~4 min).
.PHONY: txn-check
txn-check: setup
	$(PY) -m bench.txn_check --matrix --report docs/transactions-checked.md

# the same workload against three gateways on etcd, faults at wl-0's transaction coordinator (bench/txn_cluster.py)
.PHONY: txn-check-cluster
txn-check-cluster: setup
	$(PY) -m bench.txn_check --cluster-matrix --report docs/transactions-checked.md
