"""Kafka transactions across a 3-gateway cluster (docs/cluster.md, "Kafka transactions"): the
transactional id's coordinator is one gateway and the topic's two partitions are led by the two
others. librdkafka's transactional producer (transactions v1) produces to both partitions, commits
offsets with sendOffsetsToTransaction, commits one transaction and aborts the next; a read_committed
consumer sees exactly the committed records and the group's offsets are the committed ones. Before
the transaction state moved to etcd the partition leaders did not know the producer
(UNKNOWN_PRODUCER_ID). Run against a 3-node KRaft Kafka 4.3.1 first (the same client calls)."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from cluster.model import coordinator_of, place
from clusters import NODES, require_etcd, start_cluster

TOPIC = "txn-spread"
GROUP = "txn-spread-g"


def spread_topic(cluster, topic: str, prefix: str) -> tuple[str, str]:
    """(bootstrap, transactional id) after making `topic` with two partitions led by two gateways and
    picking an id that the third one coordinates."""
    bootstrap = ",".join(g.kafka_bootstrap for g in cluster.gateways.values())
    leaders = {a.leader for a in place(topic, 2, list(NODES), 1)}
    assert len(leaders) == 2
    tid = next(f"{prefix}-{i}" for i in range(1000) if coordinator_of(f"{prefix}-{i}", list(NODES)) not in leaders)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(10)
    return bootstrap, tid


def _read_committed(bootstrap: str, expect: int) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
    got, deadline = [], time.monotonic() + 30
    while time.monotonic() < deadline and len(got) < expect:
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.value().decode())
    end = time.monotonic() + 2  # nothing more arrives (an aborted record would)
    while time.monotonic() < end:
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.close()
    return got


def test_a_transaction_across_three_gateways(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, NODES)
    try:
        bootstrap, tid = spread_topic(cluster, TOPIC, "txn")
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})
        producer.init_transactions(20)
        producer.begin_transaction()
        for i in range(10):
            producer.produce(TOPIC, f"c-{i}".encode(), partition=i % 2)
        producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 7), TopicPartition(TOPIC, 1, 9)],
                                             Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
                                             .consumer_group_metadata(), 20)
        producer.commit_transaction(20)
        producer.begin_transaction()
        for i in range(6):
            producer.produce(TOPIC, f"a-{i}".encode(), partition=i % 2)
        producer.flush(20)
        producer.abort_transaction(20)
        producer.begin_transaction()
        producer.produce(TOPIC, b"c-last", partition=1)
        producer.commit_transaction(20)
        got = _read_committed(bootstrap, 11)
        assert sorted(got) == sorted([f"c-{i}" for i in range(10)] + ["c-last"])
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
        committed = c.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=10)
        c.close()
        assert [tp.offset for tp in committed] == [7, 9]
    finally:
        cluster.stop()
