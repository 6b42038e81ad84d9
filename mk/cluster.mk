# A cluster of gateways (docs/cluster.md) keeps membership and queue assignment in etcd: Debian's
# etcd-server, used by tests/cluster (a private etcd per test on free loopback ports) and by
# `make local-cluster`. CI runs as root.
.PHONY: cluster-etcd local-cluster cluster-long
# `make run` takes this step too (the shards' private etcd). With etcd on the PATH the recipe is empty,
# so the step's progress line says "ok".
cluster-etcd:
ifeq ($(shell command -v etcd 2>/dev/null),)
	@command -v etcd >/dev/null || { apt-get update -q && apt-get install -y -q etcd-server; }
endif

SETUP_TARGETS += cluster-etcd

# N gateways + one etcd on this machine (CLUSTER_NODES, default 2), until Ctrl-C.
CLUSTER_NODES ?= 2
local-cluster: install cluster-etcd
	$(PY) -m gateway.local_cluster --nodes $(CLUSTER_NODES)

# The long cluster scenarios: Java Kafka and RocketMQ clients against 3 gateways, and 20 kill -9 of a
# leader through the etcd election (tests/cluster/test_cluster_kill_loop.py).
cluster-long: setup
	CLUSTER_LONG=1 $(PY) -m pytest tests/cluster -q

# Gateways vs a 3-node KRaft Kafka on this machine: failover time (kill -9 of the leader, alternating
# systems) and acks=all produce throughput (1/2 gateways, RF1/RF2). Output: docs/replication-figures.md.
CLUSTER_BENCH_ARGS ?= --rounds 3
.PHONY: bench-cluster
bench-cluster: setup
	$(PY) -m bench.cluster_bench $(CLUSTER_BENCH_ARGS)

# The client-facing checks of the multi-broker Spark, POP and gRPC tests, on our gateways and on the
# real systems (tests/cluster/reference_sides.py): Spark's Kafka source across a leader kill -9 on 3 KRaft
# Kafka nodes (RF 2), POP and QUERY_ASSIGNMENT on a RocketMQ 5.5 name server + 2 brokers, gRPC through
# the RocketMQ proxy in cluster mode. Rewrites the results table of docs/cluster-reference.md.
.PHONY: cluster-reference
cluster-reference: setup
	$(PY) tests/cluster/reference_report.py
