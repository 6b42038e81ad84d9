"""An open Kafka transaction's diskless batches are staged in the bucket before the Produce is answered
(docs/diskless.md, "Transactions"): the gateway holding them killed with kill -9 after the sends were
acknowledged, the transaction's EndTxn after the restart commits every record exactly once, and an
abort leaves none. The same scenario passes against Apache Kafka 4.3.1 on a plain topic
(`python tests/diskless/test_diskless_txn_staged.py`)."""
from __future__ import annotations

import sys
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from acked_records import read_committed
from objstore_fixtures import object_store_on
from test_diskless_transactions import committed
from waiting import until

FAST_WAL = ["--diskless-wal-max-ms", "20"]


def _open(bootstrap: str, topic: str, tid: str, prefix: str, n: int) -> Producer:
    """A transactional producer whose transaction holds `n` records over 2 partitions, all acknowledged."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 0})
    p.init_transactions(15)
    p.begin_transaction()
    acked = []
    for i in range(n):  # one flush each: several batches (and staged objects) per partition
        p.produce(topic, value=f"{prefix}{i}".encode(), partition=i % 2,
                  on_delivery=lambda err, msg: acked.append(err is None))
        p.flush(15)
    assert acked == [True] * n
    return p


def kill9_with_open_transactions(bootstrap: str, restart, diskless: bool) -> tuple[list[str], int]:
    """Two open transactions at a kill -9 (the committing one with a group offset too); after
    `restart()` one commits, one aborts, then the aborting producer commits another. The values a
    read_committed consumer reads, and the group's committed offset."""
    tag = uuid.uuid4().hex[:6]
    topic = f"dlstaged-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"diskless.enable": "true"} if diskless else {}
    admin.create_topics([NewTopic(topic, 2, 1, config=configs)])[topic].result(15)
    committing = _open(bootstrap, topic, f"tid-c-{tag}", "c", 6)
    aborting = _open(bootstrap, topic, f"tid-a-{tag}", "a", 3)
    group = f"g-{tag}"
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    meta = c.consumer_group_metadata()
    c.close()
    committing.send_offsets_to_transaction([TopicPartition(topic, 1, 5)], meta, 15)
    restart()
    committing.commit_transaction(30)
    aborting.abort_transaction(30)
    aborting.begin_transaction()
    aborting.produce(topic, value=b"after", partition=1)
    aborting.commit_transaction(30)
    values = sorted(v for _p, _o, v in read_committed(bootstrap, topic, 2, 7))
    return values, committed(bootstrap, group, TopicPartition(topic, 1))


EXPECTED = sorted([f"c{i}" for i in range(6)] + ["after"]), 5  # each once; nothing of the aborted one


def test_an_open_transaction_survives_a_kill9_of_its_gateway(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)

    def restart() -> None:
        g.kill9()
        g.start()
    assert kill9_with_open_transactions(g.kafka_bootstrap, restart, diskless=True) == EXPECTED
    # the ended transactions' staged batches are deleted (the aborted one's in the background)
    store = object_store_on(seaweed_s3, s3_bucket, prefix="tier/")
    try:
        assert until(lambda: not list(store.list("diskless/txn/")), 15, 0.3)
    finally:
        store.close()


if __name__ == "__main__":  # the same scenario against Apache Kafka 4.3.1
    sys.path.insert(0, ".")
    from bench.brokers import KafkaBroker
    import tempfile
    with KafkaBroker(tempfile.mkdtemp(prefix="kafka-dlstaged-")) as kafka:
        def restart_kafka() -> None:
            kafka.kill9()
            kafka.start()
        assert kill9_with_open_transactions(kafka.bootstrap, restart_kafka, diskless=False) == EXPECTED
    print("Kafka 4.3.1: ok")
