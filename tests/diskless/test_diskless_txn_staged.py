"""An open Kafka transaction's diskless batches are staged in the bucket before the Produce is answered
(docs/diskless.md, "Transactions"): the gateway holding them killed with kill -9 after the sends were
acknowledged, the transaction's EndTxn after the restart commits every record exactly once, and an
abort leaves none. At the same kill -9: a commit cut short between its WAL append and the deletion of
its staged batches (an S3 proxy refuses that deletion) appends them once, not again when retried;
TxnOffsetCommit offsets sent before the transaction's first produce are committed with it. The same
scenario passes against Apache Kafka 4.3.1 on a plain topic
(`PYTHONPATH=tests:. python tests/diskless/test_diskless_txn_staged.py`)."""
from __future__ import annotations

import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from acked_records import read_committed
from objstore_fixtures import object_store_on
from s3_refusing_proxy import RefusingProxy
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


def _group_metadata(bootstrap: str, group: str):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.consumer_group_metadata()
    finally:
        c.close()


def kill9_with_open_transactions(bootstrap: str, restart, diskless: bool,
                                 commit_cut_short=lambda: lambda: time.sleep(0.5)) -> tuple[list[str], int, int]:
    """Open transactions at a kill -9: one (with a group offset too) commits after `restart()`, one
    aborts, then its producer commits another; one whose only request before the kill was a
    TxnOffsetCommit produces and commits after it; one's commit is in flight at the kill
    (`commit_cut_short()`, called before it starts, returns a wait for the moment to kill) and goes
    through after it. The values a
    read_committed consumer reads, and the two groups' committed offsets."""
    tag = uuid.uuid4().hex[:6]
    topic = f"dlstaged-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"diskless.enable": "true"} if diskless else {}
    admin.create_topics([NewTopic(topic, 2, 1, config=configs)])[topic].result(15)
    committing = _open(bootstrap, topic, f"tid-c-{tag}", "c", 6)
    aborting = _open(bootstrap, topic, f"tid-a-{tag}", "a", 3)
    group, early_group = f"g-{tag}", f"ge-{tag}"
    committing.send_offsets_to_transaction([TopicPartition(topic, 1, 5)], _group_metadata(bootstrap, group), 15)
    early = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tid-e-{tag}", "linger.ms": 0})
    early.init_transactions(15)
    early.begin_transaction()  # its offsets come before any record
    early.send_offsets_to_transaction([TopicPartition(topic, 0, 3)], _group_metadata(bootstrap, early_group), 15)
    cut = _open(bootstrap, topic, f"tid-k-{tag}", "k", 4)
    ended: list = []
    ending = threading.Thread(target=lambda: ended.append(cut.commit_transaction(60)))
    wait = commit_cut_short()
    ending.start()
    try:
        wait()
        restart()
    finally:
        ending.join(70)
    assert ended == [None]
    early.produce(topic, value=b"e0", partition=0)
    early.commit_transaction(30)
    committing.commit_transaction(30)
    aborting.abort_transaction(30)
    aborting.begin_transaction()
    aborting.produce(topic, value=b"after", partition=1)
    aborting.commit_transaction(30)
    values = sorted(v for _p, _o, v in read_committed(bootstrap, topic, 2, 12))
    return (values, committed(bootstrap, group, TopicPartition(topic, 1)),
            committed(bootstrap, early_group, TopicPartition(topic, 0)))


# each once; nothing of the aborted one
EXPECTED = sorted([f"c{i}" for i in range(6)] + [f"k{i}" for i in range(4)] + ["after", "e0"]), 5, 3


def test_an_open_transaction_survives_a_kill9_of_its_gateway(seaweed_s3, s3_bucket, gateway_factory):
    with RefusingProxy(seaweed_s3.endpoint) as proxy:
        args = seaweed_s3.tier_args(s3_bucket)
        args[args.index("--tier-endpoint") + 1] = proxy.endpoint
        g = gateway_factory(extra_args=args + FAST_WAL)

        def cut_short():  # kill once the commit's WAL append is done and its staged deletion refused
            proxy.refuse = lambda method, path: method == "DELETE" and "/diskless/txn/" in path
            return lambda: until(lambda: proxy.refused, 30, 0.1) or pytest.fail("no staged deletion")

        def restart() -> None:
            g.kill9()
            proxy.refuse = lambda method, path: False
            g.start()
        assert kill9_with_open_transactions(g.kafka_bootstrap, restart, True, cut_short) == EXPECTED
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
