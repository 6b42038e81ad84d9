"""Produce responses never point at another record (issue 30 item 2).

One 9-record batch mixes immediate records with DELAY and __STARTDELIVERTIME ones. For every
offset a client computes from the response (librdkafka delivery reports, kafka-python futures,
Java RecordMetadata.offset(): base_offset + index in the batch), the record stored at that offset
is that record; on the gateway, a delayed record's offset holds no record at all (a gap, skipped by
the clients as after compaction) and the record appears later at a new offset, once due. A RocketMQ
consumer of the same queue sees each immediate record once at its Kafka offset, and the delayed
ones after their delay, never a placeholder. Run against Apache Kafka 4.3.1 too
(KAFKA_REFERENCE_BOOTSTRAP, bench/brokers.py), where the headers mean nothing and every offset is
exact: the same assertions hold.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from gateway_process import GatewayProcess
from kafka_target import REFERENCE
from shard_aware import broker_address, partition_leaders, rocketmq_queue

from compat.jvm import JAVA_DIR, JVM_FLAGS, KAFKA_CLIENTS, classpath

DELAY_S = 3


def _batch(deliver_at_ms: int) -> list[tuple[str, tuple[str, str] | None]]:
    """(value, routing header) of the 9 records: 0, 3, 5, 8 immediate, the others delayed."""
    level = ("DELAY", "1")
    timer = ("__STARTDELIVERTIME", str(deliver_at_ms))
    header = [None, level, timer, None, level, None, timer, level, None]
    tag = uuid.uuid4().hex[:6]
    return [(f"{tag}-r{i}", h) for i, h in enumerate(header)]


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    if REFERENCE:
        yield REFERENCE
        return
    g = GatewayProcess(str(tmp_path_factory.mktemp("offsets") / "data"),
                       extra_args=["--message-delay-level", f"{DELAY_S}s"]).start()
    yield g
    g.stop()


def _address(target) -> str:
    return target if isinstance(target, str) else target.kafka_bootstrap


def _topic(target) -> str:
    name = f"offsets-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": _address(target)})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(30)
    return name


def _read_all(target, topic: str, start: int, want: int, timeout: float = 60.0) -> dict[int, str]:
    """offset -> value of the first `want` records of partition 0 from `start` (librdkafka)."""
    c = Consumer({"bootstrap.servers": _address(target), "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, start)])
    got: dict[int, str] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got[m.offset()] = m.value().decode()
    finally:
        c.close()
    return got


def _check(target, topic: str, batch, reported: dict[str, int], stored: dict[int, str]) -> None:
    """Each reported offset holds its own record, or (gateway, a delayed record) no record; every
    record is stored exactly once; immediate records sit exactly where the response said."""
    delayed = {v for v, h in batch if h is not None}
    assert sorted(stored.values()) == sorted(v for v, _h in batch)  # each record once
    where = {v: o for o, v in stored.items()}
    base = reported[batch[0][0]]
    for i, (value, _h) in enumerate(batch):
        offset = reported[value]
        assert offset == base + i  # the client computes base_offset + index in the batch
        if REFERENCE or value not in delayed:
            assert stored.get(offset) == value, (value, offset, stored)
        else:  # the gateway: a gap at the delayed record's offset, the record itself later, once due
            assert offset not in stored, (value, offset, stored)
            assert where[value] > base + len(batch) - 1


def _produce_confluent(target, topic, batch) -> dict[str, int]:
    reported = {}
    p = Producer({"bootstrap.servers": _address(target), "linger.ms": 2000, "batch.num.messages": 100})

    def done(err, msg):
        assert err is None
        reported[msg.value().decode()] = msg.offset()
    for value, header in batch:
        p.produce(topic, value=value.encode(), partition=0, headers=[header] if header else None, on_delivery=done)
    assert p.flush(60) == 0
    return reported


def _produce_kafka_python(target, topic, batch) -> dict[str, int]:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=_address(target), linger_ms=2000)
    try:
        futures = [(value, p.send(topic, value=value.encode(), partition=0,
                                  headers=[(header[0], header[1].encode())] if header else None))
                   for value, header in batch]
        p.flush(60)
        return {value: f.get(60).offset for value, f in futures}
    finally:
        p.close()


@pytest.mark.parametrize("client", ["librdkafka", "kafka-python"])
def test_offsets_of_a_batch_mixing_delayed_and_immediate_records(bootstrap, client):
    topic = _topic(bootstrap)
    batch = _batch(int(time.time() * 1000) + DELAY_S * 1000)
    produce = _produce_confluent if client == "librdkafka" else _produce_kafka_python
    reported = produce(bootstrap, topic, batch)
    _check(bootstrap, topic, batch, reported, _read_all(bootstrap, topic, 0, len(batch)))
    # a fetch that starts at a delayed record's offset goes on with the next record (a gap, as compaction leaves)
    first_delayed = reported[batch[1][0]]
    nxt = _read_all(bootstrap, topic, first_delayed, 1)
    expect = (first_delayed, batch[1][0]) if REFERENCE else (first_delayed + 2, batch[3][0])  # 2 is delayed too
    assert list(nxt.items()) == [expect]


def test_kafka_python_consumer_reads_over_the_gaps(bootstrap):
    """kafka-python's consumer, from offset 0, reads each record once at the offsets stored: over the
    mixed batch's gaps and over a batch all of whose records are delayed (on the gateway an empty
    batch taking their offsets), up to an immediate record after it."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    topic = _topic(bootstrap)
    due = int(time.time() * 1000) + DELAY_S * 1000
    batch = _batch(due)
    reported = _produce_confluent(bootstrap, topic, batch)
    all_delayed = [(f"{v}-later", ("__STARTDELIVERTIME", str(due))) for v in ("a", "b")]
    reported_later = _produce_confluent(bootstrap, topic, all_delayed)
    last = [(f"{batch[0][0]}-last", None)]
    reported_last = _produce_confluent(bootstrap, topic, last)
    assert reported_last[last[0][0]] == reported_later[all_delayed[0][0]] + 2  # after the delayed ones' offsets
    want = len(batch) + len(all_delayed) + len(last)
    c = KafkaConsumer(bootstrap_servers=_address(bootstrap), enable_auto_commit=False)
    tp = KTopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, 0)
    stored: dict[int, str] = {}
    deadline = time.monotonic() + 60
    try:
        while len(stored) < want and time.monotonic() < deadline:
            for records in c.poll(500).values():
                stored.update((r.offset, r.value.decode()) for r in records)
    finally:
        c.close()
    assert stored.get(reported_last[last[0][0]]) == last[0][0]
    assert sorted(stored.values()) == sorted(v for v, _h in batch + all_delayed + last)
    _check(bootstrap, topic, batch, reported, {o: v for o, v in stored.items() if v in dict(batch)})


def _java_classpath(tmp_path) -> str:
    cp = classpath(KAFKA_CLIENTS["4"])
    if os.path.exists(os.path.join(JAVA_DIR, "kafka4", "target", "classes", "compat", "KafkaProduceOffsets.class")):
        return cp
    out = str(tmp_path / "classes")
    src = os.path.join(JAVA_DIR, "src", "kafkaoffsets", "compat", "KafkaProduceOffsets.java")
    subprocess.run([shutil.which("javac") or "javac", "-d", out, "-cp", cp, src], check=True, timeout=300)
    return f"{out}:{cp}"


def test_java_record_metadata_offsets(bootstrap, tmp_path):
    """Java kafka-clients 4.x: RecordMetadata.offset() of each record, and its consumer reading the partition."""
    topic = _topic(bootstrap)
    batch = _batch(int(time.time() * 1000) + DELAY_S * 1000)
    timer = f"+{DELAY_S * 1000}"  # from the Java send
    args = [f"{v}|{h[0]}={timer if h[0] == '__STARTDELIVERTIME' else h[1]}" if h else v for v, h in batch]
    cmd = [shutil.which("java") or "java", *JVM_FLAGS, "-cp", _java_classpath(tmp_path), "compat.KafkaProduceOffsets",
           _address(bootstrap), topic, "0", str(len(batch)), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    lines = [line.split() for line in out.stdout.splitlines()]
    reported = {v: int(o) for kind, v, o in lines if kind == "SENT"}
    stored = {int(o): v for kind, o, v in lines if kind == "READ"}
    assert len(reported) == len(batch), out.stderr[-3000:]
    _check(bootstrap, topic, batch, reported, stored)


@pytest.mark.skipif(REFERENCE is not None, reason="the RocketMQ side of the gateway")
def test_rocketmq_consumer_of_the_same_queue(bootstrap):
    """The repo's RocketMQ client pulls the queue: every immediate record once at its Kafka offset,
    the delayed ones after their delay at their new offsets, no placeholder; the offsets it commits
    are the Kafka group's."""
    from client import ConsumeFrom, LitePullConsumer, MessageQueue
    topic = _topic(bootstrap)
    sent_ms = time.time() * 1000
    batch = _batch(int(sent_ms) + DELAY_S * 1000)
    reported = _produce_confluent(bootstrap, topic, batch)
    group = f"rmq-{uuid.uuid4().hex[:8]}"
    c = LitePullConsumer(group, bootstrap.namesrv, auto_commit=False, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    got = []
    try:
        q = MessageQueue(topic, *rocketmq_queue(partition_leaders(bootstrap.kafka_bootstrap, topic), 0))
        c.assign([q])
        deadline = time.monotonic() + 60
        while len(got) < len(batch) and time.monotonic() < deadline:
            got += [(m.body.decode(), m.queue_offset, time.time() * 1000) for m in c.poll(1.0)]
        c.commit()
    finally:
        c.shutdown()
    delayed = {v for v, h in batch if h is not None}
    assert sorted(v for v, _o, _t in got) == sorted(v for v, _h in batch)  # each once, nothing else
    for value, offset, seen in got:
        if value in delayed:
            assert offset >= reported[batch[0][0]] + len(batch) and seen >= sent_ms + DELAY_S * 1000 - 5
        else:
            assert offset == reported[value]
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    kc = KafkaConsumer(bootstrap_servers=bootstrap.kafka_bootstrap, group_id=group, enable_auto_commit=False)
    try:
        assert kc.committed(KTopicPartition(topic, 0)) == max(o for _v, o, _t in got) + 1
    finally:
        kc.close()


@pytest.mark.skipif(REFERENCE is not None, reason="delays are the gateway's")
def test_idempotent_retry_of_a_mixed_batch_gets_its_base_back_across_a_kill9(gateway_factory):
    """A retry of an idempotent batch with delayed records is a duplicate answered with the same
    base, before and after a kill -9 (the state rebuilt from the stored entries, where the delayed
    run is part of the batch's range), and the producer's next sequence is accepted right after it."""
    from kafka_raw import RawClient, produce_body, produce_error
    from shard_aware import raw_leader

    from codec.kafka import records

    g = gateway_factory(flush="sync", extra_args=["--message-delay-level", "1h"])
    topic = f"idem-{uuid.uuid4().hex[:10]}"

    def batch(seq: int, pid: int, epoch: int, delayed=()) -> bytes:
        rows = [(1000 + i, None, b"x%d" % i, [("DELAY", b"1")] if i in delayed else []) for i in range(4)]
        return records.build_batch(rows, base_timestamp=1000, producer_id=pid, producer_epoch=epoch,
                                   base_sequence=seq)

    c = RawClient(raw_leader(g.kafka_bootstrap, topic))  # the partition's leader (a shard under --shards)
    try:
        r = c.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        pid, epoch = r["producer_id"], r["producer_epoch"]
        assert produce_error(c.call(0, 9, produce_body(topic, 0, batch(0, pid, epoch)))) == (0, 0)
        mixed = produce_body(topic, 0, batch(4, pid, epoch, delayed=(1, 2)))
        assert produce_error(c.call(0, 9, mixed)) == (0, 4)
        assert produce_error(c.call(0, 9, mixed)) == (0, 4)  # a retry: the same base, nothing stored again
    finally:
        c.close()
    g.kill9()
    g.start()
    c = RawClient(raw_leader(g.kafka_bootstrap, topic))
    try:
        assert produce_error(c.call(0, 9, mixed)) == (0, 4)
        assert produce_error(c.call(0, 9, produce_body(topic, 0, batch(8, pid, epoch)))) == (0, 8)
    finally:
        c.close()
    stored = _read_all(g, topic, 0, 10, timeout=10)
    assert sorted(stored) == [0, 1, 2, 3, 4, 7, 8, 9, 10, 11]  # 5 and 6 wait an hour, in the schedule topic


@pytest.mark.skipif(REFERENCE is not None, reason="the RocketMQ side of the gateway")
def test_rocketmq_pop_consumer_of_the_same_queue(bootstrap):
    """POP (remoting SimpleConsumer, every tag): each record once, immediate ones at their Kafka
    offsets, the gaps never leased as messages; acking them all commits past the last one."""
    from client import ConsumeFrom, SimpleConsumer
    topic = _topic(bootstrap)
    batch = _batch(int(time.time() * 1000) + DELAY_S * 1000)
    reported = _produce_confluent(bootstrap, topic, batch)
    got, group = [], f"pop-{uuid.uuid4().hex[:8]}"
    with SimpleConsumer(group, bootstrap.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET,
                        subscriptions={topic: "*"}, await_duration=1) as c:
        deadline = time.monotonic() + 60
        while len(got) < len(batch) and time.monotonic() < deadline:
            for m in c.receive(max_messages=32, invisible_duration=60):
                got.append((m.body.decode(), m.queue_offset))
                c.ack(m)
    delayed = {v for v, h in batch if h is not None}
    assert sorted(v for v, _o in got) == sorted(v for v, _h in batch)
    assert all(o == reported[v] for v, o in got if v not in delayed)
    assert all(o >= reported[batch[0][0]] + len(batch) for v, o in got if v in delayed)
    from codec.remoting import RequestCode
    from remoting.wire import Peer
    broker, queue = rocketmq_queue(partition_leaders(bootstrap.kafka_bootstrap, topic), 0)
    resp = Peer(broker_address(bootstrap.namesrv, topic, broker)).call(
        RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue})
    assert int(resp.ext_fields["offset"]) == max(o for _v, o in got) + 1  # no gap left leased


@pytest.mark.skipif(REFERENCE is not None, reason="filtered views are the gateway's")
def test_views_of_the_queue(bootstrap):
    """A view of every tag holds what the partition holds, gaps included (the same offsets); a view
    of one tag holds its matching records at dense view offsets, the delayed one once due."""
    topic = _topic(bootstrap)
    every, one = f"view-{uuid.uuid4().hex[:8]}", f"view-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": _address(bootstrap)})
    for view, expression in ((every, "*"), (one, "A")):
        admin.create_topics([NewTopic(view, num_partitions=1, replication_factor=1, config={
            "filter.source.topic": topic, "filter.tag.expression": expression})])[view].result(30)
    batch = _batch(int(time.time() * 1000) + DELAY_S * 1000)
    p = Producer({"bootstrap.servers": _address(bootstrap), "linger.ms": 2000})
    for i, (value, header) in enumerate(batch):  # records 0, 1 (delayed), 3 and 4 (delayed) are tagged A
        headers = ([header] if header else []) + ([("TAGS", b"A")] if i in (0, 1, 3, 4) else [])
        p.produce(topic, value=value.encode(), partition=0, headers=headers)
    assert p.flush(60) == 0
    stored = _read_all(bootstrap, topic, 0, len(batch))
    assert _read_all(bootstrap, every, 0, len(batch)) == stored
    first_gap = next(o for o in range(len(batch)) if o not in stored)
    after = min(o for o in stored if o > first_gap)
    assert _read_all(bootstrap, every, first_gap, 1) == {after: stored[after]}  # a fetch starting in a gap
    tagged = _read_all(bootstrap, one, 0, 4)
    assert [tagged[0], tagged[1]] == [batch[0][0], batch[3][0]] and sorted(tagged) == [0, 1, 2, 3]
    assert sorted([tagged[2], tagged[3]]) == sorted([batch[1][0], batch[4][0]])
    assert _read_all(bootstrap, one, 1, 1) == {1: batch[3][0]}  # a fetch inside the cut batch
