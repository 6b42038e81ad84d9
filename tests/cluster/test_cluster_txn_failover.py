"""A transactional producer across a `kill -9` of its transaction coordinator (docs/cluster.md,
"Kafka transactions"): three gateways, a topic whose two partitions are led by two of them, a
transactional id coordinated by the third. librdkafka runs transactions of three records (every
fourth aborted); the coordinator is killed in the middle of a transaction. The producer goes on as
librdkafka does (retry a retriable end, abort an abortable transaction, re-create and re-init after
a fatal error) against the coordinator etcd's state moves to; at the end a read_committed consumer
reads every committed record once, none of an aborted one, and each transaction whose end failed
either whole or not at all. Before the state lived in etcd, the partition leaders answered
UNKNOWN_PRODUCER_ID to every transactional batch."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from cluster.model import coordinator_of
from clusters import NODES, require_etcd, start_cluster
from test_cluster_txn import spread_topic

TOPIC = "txn-failover"
TXNS, KILL_AT = 24, 6


def _producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5,
                  "transaction.timeout.ms": 30000, "message.timeout.ms": 30000})
    p.init_transactions(60)
    return p


def _run_one(producer, n: int, kill) -> tuple[str, object]:
    """One transaction; (outcome, producer): commit, abort, or unknown (its end failed)."""
    producer.begin_transaction()
    for i in range(3):
        producer.produce(TOPIC, f"t{n}-{i}".encode(), partition=i % 2)
    producer.flush(60)
    if n == KILL_AT:
        kill()
    if n % 4 == 3:
        producer.abort_transaction(60)
        return "abort", producer
    for _ in range(10):
        try:
            producer.commit_transaction(60)
            return "commit", producer
        except KafkaException as exc:
            if exc.args[0].retriable():
                continue
            if exc.args[0].txn_requires_abort():
                producer.abort_transaction(60)
                return "abort", producer
            raise
    return "unknown", producer


def test_the_coordinator_killed_mid_transaction(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, NODES)
    try:
        _bootstrap, tid = spread_topic(cluster, TOPIC, "txf")
        coordinator = coordinator_of(tid, list(NODES))
        survivors = ",".join(g.kafka_bootstrap for n, g in cluster.gateways.items() if n != coordinator)
        producer = _producer(survivors, tid)
        outcomes, reinits = {}, 0
        for n in range(TXNS):
            try:
                outcomes[n], producer = _run_one(producer, n, cluster.gateways[coordinator].kill9)
            except KafkaException:  # fatal (fenced, or the end's outcome unknown): a new instance, as clients do
                outcomes[n] = "unknown"
                producer = _producer(survivors, tid)
                reinits += 1
        c = Consumer({"bootstrap.servers": survivors, "group.id": "txf-reader", "isolation.level": "read_committed",
                      "enable.auto.commit": False})
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
        got, deadline = [], time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(0.3)
            if m is not None and not m.error():
                got.append(m.value().decode())
        c.close()
        seen = {}
        for v in got:
            seen.setdefault(int(v[1:].split("-")[0]), []).append(v)
        assert len(got) == len(set(got)), "a record read twice"
        for n, outcome in outcomes.items():
            values = sorted(seen.get(n, []))
            whole = sorted(f"t{n}-{i}" for i in range(3))
            if outcome == "commit":
                assert values == whole, (n, outcome, values)
            elif outcome == "abort":
                assert values == [], (n, outcome, values)
            else:
                assert values in ([], whole), (n, outcome, values)
        counts = {o: sum(v == o for v in outcomes.values()) for o in ("commit", "abort", "unknown")}
        print(f"outcomes {counts}, re-inits {reinits}, records read {len(got)}")
        assert counts["commit"] >= TXNS // 2, (outcomes, reinits)
    finally:
        cluster.stop()
