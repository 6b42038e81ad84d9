"""An aborted transaction whose partition moved to another gateway mid-transaction (docs/faults.md,
"transaction 197"): librdkafka's transactional producer (transactions v1, so an abort keeps the
producer epoch) writes a record to partition 0, the partition is moved to another gateway
(`rocketgate cluster move`), the producer writes a second record there, and aborts. Its next
transaction writes to partition 0 again and commits. A read_committed reader must see only the
committed record. Before, the second record's half was kept by the new leader, the abort went only to
the gateway holding the partition's halves when it joined (the old leader), and the next
transaction's commit, of the same producer epoch, committed the leftover half there: an aborted
record visible."""
from __future__ import annotations

import subprocess
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from cluster.model import place
from clusters import NODES, require_etcd, start_cluster
from test_cluster_txn import spread_topic

TOPIC = "txn-moved"


def _producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 0,
                  "transaction.timeout.ms": 60000, "message.timeout.ms": 30000})
    p.init_transactions(60)
    return p


def _move(etcd_url: str, partition: int, to: int) -> None:
    done = subprocess.run([sys.executable, "-m", "gateway.admin", "--json", "cluster", "move", TOPIC, str(partition),
                           "--to", str(to), "--etcd", etcd_url], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr


def _read_committed(bootstrap: str, partition: int, expect: str) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "moved-reader", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, partition, 0)])
    got, deadline, settle = [], time.monotonic() + 30, None
    while time.monotonic() < (settle or deadline):
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.value().decode())
            if m.value().decode() == expect:
                settle = time.monotonic() + 2  # anything else (an aborted record) would come meanwhile
    c.close()
    return got


def test_an_abort_after_the_partition_moved_leaves_nothing_visible(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, NODES)
    try:
        bootstrap, tid = spread_topic(cluster, TOPIC, "txm")
        old, new = (a.leader for a in place(TOPIC, 2, list(NODES), 1))
        producer = _producer(bootstrap, tid)
        producer.begin_transaction()
        producer.produce(TOPIC, b"aborted-0", partition=0)
        assert producer.flush(30) == 0
        _move(cluster.etcd.url, 0, new)  # partition 0 leaves `old` (which holds the transaction's half)
        failed = []
        producer.produce(TOPIC, b"aborted-1", partition=0, on_delivery=lambda err, _m: failed.append(err))
        producer.flush(30)
        try:
            producer.abort_transaction(60)
        except KafkaException as exc:  # fatal (the write refused as the transaction's state): a new instance
            print("ABORT RAISED", exc, failed)
            producer = _producer(bootstrap, tid)
        producer.begin_transaction()
        producer.produce(TOPIC, b"committed", partition=0)
        producer.commit_transaction(60)
        got = _read_committed(bootstrap, 0, "committed")
        assert got == ["committed"], (got, failed, old, new)  # before: aborted-1 visible
    finally:
        cluster.stop()
