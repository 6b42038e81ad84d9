"""Kafka's transaction layout (issue 33; docs/mapping.md "Transactions"): a transaction's records take
their produce-time offsets, each end writes a marker taking one offset, aborted records stay in the log
and read_committed consumers skip them (Fetch's aborted_transactions), and an open transaction holds
the last stable offset. The Kafka-client tests run against Apache Kafka 4.3.1 first
(KAFKA_REFERENCE_BOOTSTRAP, bench/brokers.py); RocketMQ pull and POP readers of the same queue (the
gateway's) never receive an uncommitted or aborted record, nor a marker.
"""
from __future__ import annotations

import os
import time
import uuid

from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka_target import eventually, gateway_only, target  # noqa: F401 - the module's broker fixture
from shard_aware import partition_leaders, rocketmq_queue


def _topic(bootstrap: str) -> str:
    name = f"txnlayout-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(30)
    return name


def _producer(bootstrap: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tid-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(30)
    return p


def _transaction(p: Producer, topic: str, values: list[str], commit: bool | None) -> None:
    """One transaction of `values` on partition 0, committed, aborted or (None) left open."""
    p.begin_transaction()
    for v in values:
        p.produce(topic, value=v.encode(), partition=0)
    p.flush(30)
    if commit is True:
        p.commit_transaction(30)
    elif commit is False:
        p.abort_transaction(30)


def _read(bootstrap: str, topic: str, isolation: str, want: int, wait: float = 30.0, settle: bool = False):
    """([(offset, value)] of up to `want` records from offset 0, the consumer's position after them
    (`settle`: polled a little longer, so the position moves past a trailing marker)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "isolation.level": isolation})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + wait
    try:
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.offset(), m.value().decode()))
        for _ in range(4 if settle else 0):  # past a trailing marker: the position moves on without a message
            c.poll(0.5)
        return got, c.position([TopicPartition(topic, 0)])[0].offset
    finally:
        c.close()


def _latest(bootstrap: str, topic: str, isolation) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    return admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=isolation)[tp].result(30).offset


def test_markers_take_offsets_and_aborted_records_are_skipped(target):  # noqa: F811
    bootstrap = target.bootstrap
    topic = _topic(bootstrap)
    p = _producer(bootstrap)
    _transaction(p, topic, ["c0", "c1", "c2"], True)  # 0-2, commit marker 3
    _transaction(p, topic, ["a0", "a1"], False)  # 4-5, abort marker 6
    _transaction(p, topic, ["c3"], True)  # 7, commit marker 8
    committed, position = _read(bootstrap, topic, "read_committed", 4, settle=True)
    assert committed == [(0, "c0"), (1, "c1"), (2, "c2"), (7, "c3")]
    assert position == 9  # past the last marker
    uncommitted, _ = _read(bootstrap, topic, "read_uncommitted", 6)
    assert uncommitted == [(0, "c0"), (1, "c1"), (2, "c2"), (4, "a0"), (5, "a1"), (7, "c3")]
    assert _latest(bootstrap, topic, IsolationLevel.READ_COMMITTED) == 9
    assert _latest(bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 9


def test_an_open_transaction_holds_the_last_stable_offset(target):  # noqa: F811
    bootstrap = target.bootstrap
    topic = _topic(bootstrap)
    p = _producer(bootstrap)
    _transaction(p, topic, ["t0", "t1"], None)  # open: 0-1
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"p0", partition=0)  # 2, behind the open transaction
    plain.flush(30)
    assert _latest(bootstrap, topic, IsolationLevel.READ_COMMITTED) == 0
    assert _latest(bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 3
    assert _read(bootstrap, topic, "read_committed", 1, wait=2)[0] == []
    assert _read(bootstrap, topic, "read_uncommitted", 3)[0] == [(0, "t0"), (1, "t1"), (2, "p0")]
    p.commit_transaction(30)  # marker 3
    assert _read(bootstrap, topic, "read_committed", 3)[0] == [(0, "t0"), (1, "t1"), (2, "p0")]
    assert _latest(bootstrap, topic, IsolationLevel.READ_COMMITTED) == 4


@gateway_only
def test_rocketmq_readers_never_see_uncommitted_aborted_or_markers(target):  # noqa: F811
    from client import ConsumeFrom, LitePullConsumer, MessageQueue, SimpleConsumer
    bootstrap, namesrv = target.bootstrap, target.gateway.namesrv
    topic = _topic(bootstrap)
    p = _producer(bootstrap)
    _transaction(p, topic, ["a0", "a1"], None)  # open: 0-1
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"p0", partition=0)  # 2
    plain.flush(30)

    pull = LitePullConsumer(f"pull-{uuid.uuid4().hex[:8]}", namesrv, auto_commit=False,
                            consume_from=ConsumeFrom.FIRST_OFFSET)
    pull.start()
    try:
        pull.assign([MessageQueue(topic, *rocketmq_queue(partition_leaders(bootstrap, topic), 0))])
        assert [m.body for _ in range(3) for m in pull.poll(1.0)] == []  # held back by the open transaction
        p.abort_transaction(30)  # marker 3
        _transaction(p, topic, ["c0", "c1"], True)  # 4-5, marker 6
        got, deadline = [], time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            got += [(m.queue_offset, m.body.decode()) for m in pull.poll(1.0)]
        got += [(m.queue_offset, m.body.decode()) for m in pull.poll(1.0)]  # nothing more comes
    finally:
        pull.shutdown()
    assert got == [(2, "p0"), (4, "c0"), (5, "c1")]

    popped = []
    with SimpleConsumer(f"pop-{uuid.uuid4().hex[:8]}", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET,
                        subscriptions={topic: "*"}, await_duration=1) as c:
        deadline = time.monotonic() + 30
        while len(popped) < 3 and time.monotonic() < deadline:
            for m in c.receive(max_messages=32, invisible_duration=60):
                popped.append((m.queue_offset, m.body.decode()))
                c.ack(m)
        for m in c.receive(max_messages=32, invisible_duration=60):
            popped.append((m.queue_offset, m.body.decode()))
    assert sorted(popped) == [(2, "p0"), (4, "c0"), (5, "c1")]


def test_a_recreated_topic_forgets_the_aborted_transactions_of_the_deleted_one(target):  # noqa: F811
    bootstrap = target.bootstrap
    topic = _topic(bootstrap)
    p = _producer(bootstrap)
    _transaction(p, topic, ["a0", "a1", "a2"], False)  # 0-2 aborted, marker 3
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(30)

    def recreate():
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
        # Kafka deletes asynchronously: wait until the new topic's partition answers
        Producer({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions[0]
    eventually(recreate, 60)
    _transaction(p, topic, ["c0", "c1", "c2"], True)  # the same producer, at offsets 0-2 again
    assert _read(bootstrap, topic, "read_committed", 3)[0] == [(0, "c0"), (1, "c1"), (2, "c2")]


@gateway_only
def test_the_aborted_index_is_rebuilt_from_the_op_log_after_a_kill9(gateway_factory):
    """The index cache (config/kafkaAbortedTxns.json) lost with a kill -9: each abort's op message,
    written with its marker, rebuilds it, so read_committed consumers still skip the aborted records."""
    g = gateway_factory(flush="sync")
    topic = _topic(g.kafka_bootstrap)
    p = _producer(g.kafka_bootstrap)
    _transaction(p, topic, ["c0"], True)  # 0, marker 1
    _transaction(p, topic, ["a0", "a1"], False)  # 2-3, marker 4
    _transaction(p, topic, ["c1"], True)  # 5, marker 6
    g.kill9()
    cache = os.path.join(g.data_dir, "config", "kafkaAbortedTxns.json")
    if os.path.exists(cache):
        os.remove(cache)
    g.start()
    assert _read(g.kafka_bootstrap, topic, "read_committed", 2)[0] == [(0, "c0"), (5, "c1")]


@gateway_only
def test_init_producer_id_aborts_a_transaction_left_open_by_a_kill9(gateway_factory):
    """A transaction open at a kill -9 holds its partition's last stable offset; the transactional id's
    next InitProducerId aborts it at once (as Kafka's does), not the check-back after its 60 s timeout."""
    g = gateway_factory(flush="sync")
    topic, tid = _topic(g.kafka_bootstrap), f"tid-{uuid.uuid4().hex[:8]}"
    config = {"bootstrap.servers": g.kafka_bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000}
    p = Producer(config)
    p.init_transactions(30)
    _transaction(p, topic, ["b0", "b1"], None)  # open at the kill: 0-1
    g.kill9()
    g.start()
    p2 = Producer(config)
    p2.init_transactions(30)  # aborts b0, b1: marker 2
    _transaction(p2, topic, ["c0"], True)  # 3, marker 4
    assert _read(g.kafka_bootstrap, topic, "read_committed", 1, wait=15)[0] == [(3, "c0")]


@gateway_only
def test_a_rocketmq_transaction_cannot_pose_as_a_kafka_one(target):  # noqa: F811
    """A RocketMQ transactional message carrying the half record's reserved properties is an ordinary
    half: its commit delivers it (not a marker), nothing of Kafka's aborted index is touched."""
    from client import (Admin, ConsumeFrom, LitePullConsumer, Message, MessageQueue, TransactionProducer,
                        TransactionState)
    namesrv, topic = target.gateway.namesrv, f"txnpose-{uuid.uuid4().hex[:8]}"
    with Admin(namesrv) as admin:
        admin.create_topic(topic, queues=1)
    forged = {"KAFKA_TXN_FIRST": "0", "KAFKA_TXN_PRODUCER": "7,0"}
    with TransactionProducer(f"pg-{uuid.uuid4().hex[:8]}", namesrv, local_transaction=lambda _m, arg: arg,
                             check_listener=lambda _m: TransactionState.COMMIT) as p:
        p.send_in_transaction(Message(topic, b"committed", properties=forged), TransactionState.COMMIT)
    c = LitePullConsumer(f"cg-{uuid.uuid4().hex[:8]}", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    try:
        c.assign([MessageQueue(topic, *rocketmq_queue(partition_leaders(target.bootstrap, topic), 0))])
        got, deadline = [], time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            got += c.poll(1.0)
    finally:
        c.shutdown()
    assert [m.body for m in got] == [b"committed"]
