"""Log compaction (`cleanup.policy=compact`) with a real Kafka client: after the cleaner ran, a fresh
consumer sees the latest value of each key at its original offset (the offsets in between are gaps),
tombstones stay until `delete.retention.ms` has passed and a later pass removes them, and the
compacted view survives a kill -9. Checked against a real Kafka 4.x first (KAFKA_REFERENCE_BOOTSTRAP,
a broker with log.cleaner.backoff.ms=500)."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from gateway_process import GatewayProcess
from kafka_target import REFERENCE, Target, gateway_only

BACKOFF_MS = 300
COMPACT = {"cleanup.policy": "compact", "segment.ms": "300", "min.cleanable.dirty.ratio": "0.01"}


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    if REFERENCE:
        yield Target(REFERENCE, None)
        return
    g = GatewayProcess(str(tmp_path_factory.mktemp("compaction") / "data"),
                       extra_args=["--log-cleaner-backoff-ms", str(BACKOFF_MS)]).start()
    yield Target(g.kafka_bootstrap, g)
    g.stop()


def _topic(target, configs: dict) -> str:
    name = f"cp-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(15)
    return name


def _produce(target, topic: str, pairs) -> dict:
    """Produce (key, value) pairs one by one; {offset: (key, value)}."""
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    out = {}

    def report(err, msg):
        assert err is None, err
        out[msg.offset()] = (msg.key(), msg.value())
    for key, value in pairs:
        p.produce(topic, key=key, value=value, partition=0, on_delivery=report)
        p.flush(10)
    assert p.flush(30) == 0
    return out


def _read_all(target, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of everything a fresh consumer reads from the beginning to the end."""
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    tp = TopicPartition(topic, 0)
    end = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(15).offset
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().name() == "_PARTITION_EOF" and (m.offset() >= end):
                    break
                continue
            got.append((m.offset(), m.key(), m.value()))
            if m.offset() >= end - 1:
                break
    finally:
        c.close()
    return got


def _wait_compacted(target, topic: str, done, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while True:
        seen = _read_all(target, topic)
        if done(seen) or time.monotonic() > deadline:
            return seen
        time.sleep(0.5)


def _rounds(keys: int, rounds: int):
    return [(b"k%d" % k, b"k%d:%d" % (k, r)) for r in range(rounds) for k in range(keys)]


def _keyed_once(seen, prefix=b"k") -> bool:
    keys = [k for _o, k, _v in seen if k.startswith(prefix)]
    return len(keys) == len(set(keys))


def test_latest_value_per_key_survives_at_its_offset(target):
    topic = _topic(target, COMPACT)
    produced = _produce(target, topic, _rounds(10, 5) + [(b"k0", None), (b"k1", None)])
    time.sleep(0.5)
    produced.update(_produce(target, topic, [(b"roll", b"1")]))  # Kafka compacts closed segments only
    seen = _wait_compacted(target, topic, _keyed_once)
    assert _keyed_once(seen), seen
    latest = {}
    for offset, (key, value) in sorted(produced.items()):
        latest[key] = (offset, value)
    view = {key: (offset, value) for offset, key, value in seen}
    for k in range(10):
        assert view[b"k%d" % k] == latest[b"k%d" % k]  # tombstones (k0, k1) kept: delete.retention.ms is a day
    assert view[b"k0"][1] is None and view[b"k1"][1] is None
    offsets = [o for o, _k, _v in seen]
    assert offsets == sorted(offsets) and len(offsets) < max(produced) + 1  # gaps where records went
    for offset, key, value in seen:
        assert produced[offset] == (key, value)


def test_tombstones_go_after_delete_retention(target):
    topic = _topic(target, {**COMPACT, "delete.retention.ms": "0"})
    _produce(target, topic, _rounds(4, 2) + [(b"k0", None)])
    time.sleep(0.5)
    _produce(target, topic, [(b"roll", b"1")])
    _wait_compacted(target, topic, _keyed_once)
    # a later pass (more dirty data) drops the tombstone, as Kafka's cleaner does past its horizon
    deadline = time.monotonic() + 90
    while True:
        _produce(target, topic, [(b"other", b"x")])
        time.sleep(0.5)
        _produce(target, topic, [(b"roll", b"2")])
        seen = _read_all(target, topic)
        if all(k != b"k0" for _o, k, _v in seen) or time.monotonic() > deadline:
            break
    assert all(k != b"k0" for _o, k, _v in seen), seen
    assert {k for _o, k, _v in seen} >= {b"k1", b"k2", b"k3"}


@gateway_only
def test_compacted_view_survives_kill9(target):
    topic = _topic(target, COMPACT)
    produced = _produce(target, topic, _rounds(20, 10))
    seen = _wait_compacted(target, topic, _keyed_once)
    assert _keyed_once(seen) and len(seen) == 20
    target.gateway.kill9()
    target.gateway.start()
    assert _read_all(target, topic) == seen
    more = _produce(target, topic, _rounds(20, 1))
    seen2 = _wait_compacted(target, topic, _keyed_once)
    assert [o for o, _k, _v in seen2] == sorted(more)
    assert all(produced.get(o, more.get(o)) == (k, v) for o, k, v in seen2)


def test_a_keyless_record_is_refused_on_a_compacted_topic(target):
    """Kafka: INVALID_RECORD for the partition ("Compacted topic cannot accept message without
    key"), nothing stored; keyed records of the same topic are taken."""
    from confluent_kafka import KafkaError
    topic = _topic(target, COMPACT)
    errors = []
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0, "retries": 0})
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, _msg: errors.append(err))
    assert p.flush(30) == 0
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD
    _produce(target, topic, [(b"k", b"v")])
    assert [(k, v) for _, k, v in _read_all(target, topic)] == [(b"k", b"v")]
