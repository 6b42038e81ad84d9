"""kill -9 of a real gateway (--flush sync) in the middle of cross-protocol work, with the clients
kept alive where a real deployment would keep them: nothing the broker acknowledged is lost, and
nothing is delivered twice.

- One offset table for both protocols, round trips: a Kafka group (kafka-python, group
  protocol) consumes exactly half of each partition and commits, a native push consumer of the
  same group continues from there and persists on shutdown, a Kafka group (confluent-kafka) picks
  up again; and the reverse (native lite pull -> Kafka -> native). Every leg is separated by a
  kill -9, and every reader would start from the beginning if a commit were lost, so a lost
  commit shows as a duplicate.
- The retry chain of several messages with the push consumer running through two kill -9s (each
  while the messages wait in the delay queue): every message is delivered once per
  reconsumeTimes 0..max, then dead-lettered once, and the DLQ is read over Kafka.
- An idempotent Kafka producer (as Java's is by default) sending DELAY records in mixed batches
  keeps producing across kill -9s (its sequences are rebuilt from the stored data, including the
  batches still in the schedule topic), and every record appears once, the delayed ones when due;
  likewise a transactional producer after an aborted transaction (its batches only in the half topic).

(The one-hop variants of these scenarios are in test_sem_shared_offsets.py,
test_sem_retry_kill9.py and tests/kafka/test_kafka_semantics.py.)
"""
from __future__ import annotations

import collections
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from confluent_kafka import TopicPartition as CKTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from client import (Admin, ConsumeFrom, ConsumeStatus, Message, MessageQueue, Producer,
                    PushConsumer)
from gateway_process import TEST_SHARDS
from semantics_fixtures import confluent_group_read, native_lite_read, poll_settled, wait_for
from shard_aware import broker_names, partition_leaders, rocketmq_queue


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topic(g, topic: str, queues: int) -> None:
    with Admin(g.namesrv) as admin:
        admin.create_topic(topic, queues)


def _kafka_produce(g, topic: str, values_by_partition: dict[int, list[str]]) -> None:
    p = CKProducer({"bootstrap.servers": g.kafka_bootstrap, "acks": "all", "linger.ms": 20})
    for part, values in values_by_partition.items():
        for v in values:
            p.produce(topic, value=v.encode(), partition=part)
    assert p.flush(30) == 0


def _native_produce(g, topic: str, values_by_queue: dict[int, list[str]]) -> None:
    """Each list to its queue, named as RocketMQ names it (under --shards, the broker leading it)."""
    leaders = partition_leaders(g.kafka_bootstrap, topic) if TEST_SHARDS > 1 else {}
    with Producer(_name("pg"), g.namesrv) as p:
        for q, values in values_by_queue.items():
            broker, local = rocketmq_queue(leaders, q)
            for v in values:
                p.send(Message(topic, v.encode(), tags="T"), queue=MessageQueue(topic, broker, local))


def _values(prefix: str, parts: int, start: int, stop: int) -> dict[int, list[str]]:
    return {p: [f"{prefix}{p}-{i}" for i in range(start, stop)] for p in range(parts)}


def _flat(values: dict[int, list[str]]) -> list[str]:
    return sorted(v for vs in values.values() for v in vs)


@pytest.mark.timeout(90)
def test_offsets_kafka_to_native_to_kafka_across_kill9(gateway_factory):
    g = gateway_factory(flush="sync")
    topic, group = _name("k2n2k"), _name("G")
    _create_topic(g, topic, 2)
    first = _values("a", 2, 0, 10)
    _kafka_produce(g, topic, first)

    # Leg 1, Kafka (kafka-python, JoinGroup/SyncGroup, group-generation commit): exactly the
    # first half of each partition, then a synchronous commit of the consumer's positions.
    kc = KafkaConsumer(bootstrap_servers=g.kafka_bootstrap, group_id=group, enable_auto_commit=False,
                       auto_offset_reset="earliest")
    kc.subscribe([topic])
    seen: dict[int, list[str]] = collections.defaultdict(list)
    try:
        deadline = time.monotonic() + 30
        while sum(map(len, seen.values())) < 10 and time.monotonic() < deadline:
            for tp, recs in kc.poll(timeout_ms=300, max_records=1).items():
                for r in recs:
                    seen[tp.partition].append(r.value.decode())
                    if len(seen[tp.partition]) == 5:
                        kc.pause(tp)
        assert {p: vs for p, vs in seen.items()} == {p: vs[:5] for p, vs in first.items()}
        kc.commit()
        assert [kc.committed(KTopicPartition(topic, p)) for p in range(2)] == [5, 5]
    finally:
        kc.close(autocommit=False)
    g.kill9()
    g.start()

    # Leg 2, native push consumer of the same group (first offset if the commit were lost): the
    # rest and nothing else; its positions are persisted when it shuts down.
    got: list[str] = []
    lock = threading.Lock()

    def listener(msgs):
        with lock:
            got.extend(m.body.decode() for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    pc = PushConsumer(group, g.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    pc.subscribe(topic, "*")
    pc.register_listener(listener)
    pc.start()
    try:
        assert wait_for(lambda: len(got) >= 10, 30), got
        time.sleep(2)  # anything delivered twice or from before the commit would come by now
    finally:
        pc.shutdown()
    assert sorted(got) == sorted(v for vs in first.values() for v in vs[5:])
    g.kill9()
    g.start()

    # Leg 3, Kafka again (confluent-kafka, earliest if nothing were committed): only what is new.
    more = _values("b", 2, 0, 3)
    _native_produce(g, topic, more)
    assert confluent_group_read(g, group, topic, 6, commit=False) == _flat(more)


@pytest.mark.timeout(90)
def test_offsets_native_to_kafka_to_native_across_kill9(gateway_factory):
    g = gateway_factory(flush="sync")
    topic, group = _name("n2k2n"), _name("H")
    _create_topic(g, topic, 2)
    first = _values("a", 2, 0, 5)
    _native_produce(g, topic, first)
    # Leg 1, native: everything so far, committed (UPDATE_CONSUMER_OFFSET), then kill -9.
    assert native_lite_read(g, group, topic, 10) == _flat(first)
    g.kill9()
    g.start()
    # Leg 2, Kafka (earliest if the native commit were lost): only the records added since.
    second = _values("b", 2, 0, 5)
    _kafka_produce(g, topic, second)
    assert confluent_group_read(g, group, topic, 10, commit=True) == _flat(second)
    g.kill9()
    g.start()
    # Leg 3, native again (first offset if the Kafka commit were lost): only the records added since.
    third = _values("c", 2, 0, 3)
    _kafka_produce(g, topic, third)
    assert native_lite_read(g, group, topic, 6) == _flat(third)


@pytest.mark.timeout(90)
def test_retry_chain_of_a_running_consumer_across_two_kill9s(gateway_factory):
    # Retries wait at level 3 + reconsumeTimes: 6 s each, the window for the kills (4 s was too short for a
    # kill -9 under a loaded machine's CI run).
    g = gateway_factory(flush="sync", extra_args=["--message-delay-level", "1s 1s 6s 6s 6s 6s"])
    topic, group = _name("retry-k9"), _name("R")
    _create_topic(g, topic, 2)
    got: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def fail(msgs):
        with lock:
            got.extend((m.body.decode(), m.reconsume_times, m.msg_id) for m in msgs)
        return ConsumeStatus.RECONSUME_LATER

    def deliveries(times: int) -> int:
        with lock:
            return sum(n == times for _b, n, _i in got)

    # The consumer runs through both kills and rebalances every second, so rebalances fall before
    # its next heartbeat (30 s) reaches the restarted gateway: it must heartbeat then, not drop
    # its queues.
    pc = PushConsumer(group, g.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, max_reconsume_times=2,
                      rebalance_interval=1)
    pc.subscribe(topic, "*")
    pc.register_listener(fail)
    pc.start()
    admin = Admin(g.namesrv).start()
    sent = {}
    try:
        with Producer(_name("pg"), g.namesrv) as p:
            for i in range(3):
                r = p.send(Message(topic, b"poison-%d" % i, tags="T"))
                sent[r.msg_id] = f"poison-{i}"
        for times in (0, 1):
            # All three failed at `times` and wait in schedule queue 2 + times: kill -9 there.
            # (Under --shards each shard schedules the retries of the queues it leads: every broker's.)
            scheduled = [MessageQueue("SCHEDULE_TOPIC_XXXX", b, 2 + times) for b in broker_names()]
            # After a restart the retries are due within one 6 s delay step: a consumer that
            # dropped its queues would wait for its next heartbeat (up to 30 s) instead.
            assert wait_for(lambda: deliveries(times) >= 3 and sum(map(admin.max_offset, scheduled)) >= 3,
                            30 if times == 0 else 14), got
            time.sleep(0.3)  # the send-back answers reach the consumer
            assert deliveries(times + 1) == 0, got  # still waiting when the gateway dies
            g.kill9()
            g.start()
            admin.shutdown()  # its brokers' addresses: under --shards shard 1 listens on a new port now
            admin = Admin(g.namesrv).start()
        assert wait_for(lambda: deliveries(2) >= 3, 14), got
        dlq = MessageQueue(f"%DLQ%{group}", broker_names()[0], 0)  # under --shards led by shard 0 (docs/shards.md)
        assert wait_for(lambda: admin.max_offset(dlq) >= 3, 10)
        time.sleep(6.5)  # a duplicate (re)delivery would come within one delay step
    finally:
        admin.shutdown()
        pc.shutdown()
    with lock:
        counts = collections.Counter((sent.get(i), b, n) for b, n, i in got)
    assert sorted(counts) == sorted((b, b, n) for b in sent.values() for n in range(3)), got
    assert set(counts.values()) == {1}, got

    # The dead letters, read over Kafka by a subscribed group.
    k = CKConsumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": _name("dlq"), "auto.offset.reset": "earliest",
                    "enable.auto.commit": False})
    k.subscribe([f"%DLQ%{group}"])
    try:
        dead = poll_settled(k, 3, timeout=20, settle=1.5)
    finally:
        k.close()
    assert sorted(m.value().decode() for m in dead) == sorted(sent.values())
    for m in dead:
        headers = dict(m.headers())
        assert headers["RETRY_TOPIC"] == topic.encode()
        assert sent[headers["ORIGIN_MESSAGE_ID"].decode()] == m.value().decode()


@pytest.mark.timeout(90)
def test_idempotent_kafka_producer_with_delay_headers_across_kill9(gateway_factory):
    """DELAY=1 is 1 s (as by default), DELAY=2 is 6 s."""
    g = gateway_factory(flush="sync", extra_args=["--message-delay-level", "1s 6s"])
    topic = _name("delay-idem-k9")
    _create_topic(g, topic, 2)
    fatal = []  # e.g. OUT_OF_ORDER_SEQUENCE_NUMBER: the producer is unusable (not "all brokers down")
    p = CKProducer({"bootstrap.servers": g.kafka_bootstrap, "enable.idempotence": True, "acks": "all",
                    "linger.ms": 50, "error_cb": lambda e: fatal.append(e) if e.fatal() else None})
    acked = []

    def produce(value: str, part: int, delay: int | None = None) -> None:
        p.produce(topic, value=value.encode(), partition=part,
                  headers=[("DELAY", str(delay).encode())] if delay else None,
                  on_delivery=lambda err, msg: acked.append((value, err)))

    def flush() -> None:
        assert p.flush(20) == 0
        assert [e for _v, e in acked if e is not None] == [] and fatal == [], (acked, fatal)

    # A live reader from offset 0 of both partitions, kept through the kills: when things appear.
    c = CKConsumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": _name("r"), "enable.auto.commit": False})
    c.assign([CKTopicPartition(topic, part, 0) for part in range(2)])
    seen_at: dict[str, list[float]] = collections.defaultdict(list)

    def drain(seconds: float, until=lambda: False) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                seen_at[m.value().decode()].append(time.time())

    try:
        # One mixed batch per partition, split into four runs; the last run of partition 1 is a
        # delayed one, so the producer's newest sequence there is only in the schedule topic.
        sent_at = time.time()
        for part, delays in ((0, (None, 1, 2, None)), (1, (None, 1, None, 2))):
            names = iter(("now-a", "now-b"))
            for delay in delays:
                produce({1: "d1-", 2: "d6-"}[delay] + str(part) if delay else f"{next(names)}{part}", part, delay)
        flush()
        g.kill9()  # right after the acknowledgement: every delayed run is still in the schedule topic
        g.start()
        for part in range(2):  # the same producer goes on: its sequences were rebuilt
            produce(f"after-1st-{part}", part)
        flush()
        drain(15, until=lambda: all(seen_at[f"d1-{part}"] for part in range(2)))
        assert all(seen_at[f"d1-{part}"] for part in range(2)), dict(seen_at)
        assert not any(seen_at[f"d6-{part}"] for part in range(2)), dict(seen_at)
        g.kill9()  # the 6 s records still waiting
        g.start()
        for part in range(2):
            produce(f"after-2nd-{part}", part)
        flush()
        drain(max(0.0, sent_at + 6.0 - time.time()) + 3.0)
    finally:
        c.close()
    expected = sorted(f"{v}{part}" for part in range(2) for v in ("now-a", "d1-", "d6-", "now-b",
                                                                  "after-1st-", "after-2nd-"))
    assert sorted(seen_at) == expected and all(len(t) == 1 for t in seen_at.values()), dict(seen_at)
    for part in range(2):
        assert seen_at[f"d1-{part}"][0] >= sent_at + 1.0 - 0.05
        assert seen_at[f"d6-{part}"][0] >= sent_at + 6.0 - 0.05
    # A fresh reader from the start of both partitions sees the same: each record once.
    fresh = CKConsumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": _name("f"), "enable.auto.commit": False})
    fresh.assign([CKTopicPartition(topic, part, 0) for part in range(2)])
    try:
        again = [m.value().decode() for m in poll_settled(fresh, len(expected), timeout=15, settle=1, poll=0.2)]
    finally:
        fresh.close()
    assert sorted(again) == expected


@pytest.mark.timeout(60)
def test_transactional_producer_goes_on_after_abort_and_kill9(gateway_factory):
    """An aborted transaction's batches stay only in the half topic, yet used their sequences: the
    same transactional producer commits its next transaction after a kill -9 of the gateway."""
    g = gateway_factory(flush="sync")
    topic = _name("txn-k9")
    _create_topic(g, topic, 1)
    p = CKProducer({"bootstrap.servers": g.kafka_bootstrap, "transactional.id": _name("tx")})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce(topic, b"c1", partition=0)
    p.commit_transaction(15)
    p.begin_transaction()
    p.produce(topic, b"a1", partition=0)
    p.produce(topic, b"a2", partition=0)
    assert p.flush(15) == 0
    p.abort_transaction(15)
    g.kill9()
    g.start()
    p.begin_transaction()
    p.produce(topic, b"c2", partition=0)
    p.commit_transaction(20)  # was a fatal OUT_OF_ORDER_SEQUENCE_NUMBER
    c = CKConsumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": _name("r"), "enable.auto.commit": False,
                    "isolation.level": "read_committed"})
    c.assign([CKTopicPartition(topic, 0, 0)])
    try:
        got = [m.value() for m in poll_settled(c, 2, timeout=15, settle=1, poll=0.2)]
    finally:
        c.close()
    assert got == [b"c1", b"c2"]
