"""Per-topic retention (`retention.ms`, `retention.bytes`) with a real Kafka client: the topic's log
start offset moves (ListOffsets EARLIEST), reads below it are OFFSET_OUT_OF_RANGE, and the rest is
still served. Checked against a real Kafka 4.x first (KAFKA_REFERENCE_BOOTSTRAP, a broker with
log.retention.check.interval.ms=1000)."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from gateway_process import GatewayProcess
from kafka_target import REFERENCE, Target

CHECK_MS = 300


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    if REFERENCE:
        yield Target(REFERENCE, None)
        return
    g = GatewayProcess(str(tmp_path_factory.mktemp("retention") / "data"),
                       extra_args=["--log-retention-check-interval-ms", str(CHECK_MS)]).start()
    yield Target(g.kafka_bootstrap, g)
    g.stop()


def _topic(target, configs: dict) -> str:
    name = f"rt-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(15)
    return name


def _produce(target, topic: str, count: int, size: int = 10) -> None:
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(count):
        p.produce(topic, value=b"%d:" % i + b"x" * size, partition=0)
        p.poll(0)
    assert p.flush(30) == 0


def _offset(target, topic: str, spec) -> int:
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    tp = TopicPartition(topic, 0)
    return admin.list_offsets({tp: spec})[tp].result(15).offset


def _wait_earliest(target, topic: str, done, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        earliest = _offset(target, topic, OffsetSpec.earliest())
        if done(earliest) or time.monotonic() > deadline:
            return earliest
        time.sleep(0.3)


def _settled_earliest(target, topic: str, timeout: float = 60.0) -> int:
    """The earliest offset once retention stopped moving it: a trim may take several checks, and a read
    from an offset a later check cut is reset (the flake of one CI rehearsal: _AUTO_OFFSET_RESET)."""
    deadline = time.monotonic() + timeout
    last = _wait_earliest(target, topic, lambda e: e > 0)
    while time.monotonic() < deadline:
        time.sleep(3 * CHECK_MS / 1000)
        now = _offset(target, topic, OffsetSpec.earliest())
        if now == last:
            break
        last = now
    return last


def _read_from(target, topic: str, offset: int, want: int) -> list[int] | str:
    """Offsets read from `offset` (auto.offset.reset=error), or the error name."""
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "error", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, offset)])
    got = []
    try:
        deadline = time.monotonic() + 20
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                return m.error().name()
            got.append(m.offset())
    except KafkaException as exc:
        return exc.args[0].name()
    finally:
        c.close()
    return got


def test_retention_ms_moves_the_log_start(target):
    topic = _topic(target, {"retention.ms": "3000", "segment.ms": "500"})
    _produce(target, topic, 10)
    time.sleep(1)
    _produce(target, topic, 1)  # rolls Kafka's segment; the gateway's granularity is one batch
    earliest = _wait_earliest(target, topic, lambda e: e >= 10)
    assert earliest >= 10
    assert _read_from(target, topic, 0, 1) == "_AUTO_OFFSET_RESET"
    _produce(target, topic, 3)
    latest = _offset(target, topic, OffsetSpec.latest())
    assert latest == 14
    got = _read_from(target, topic, _offset(target, topic, OffsetSpec.earliest()), 1)
    assert isinstance(got, list) and got and got[0] >= 10


def test_retention_bytes_keeps_at_least_the_limit(target):
    mib = 1 << 20
    topic = _topic(target, {"retention.bytes": str(mib), "segment.bytes": str(mib)})
    _produce(target, topic, 3000, size=1000)  # ~3.2 MB of batches
    earliest = _settled_earliest(target, topic)
    assert 0 < earliest < 3000 - mib // 1100  # the newest ~1 MiB at least is kept
    assert _read_from(target, topic, 0, 1) == "_AUTO_OFFSET_RESET"
    got = _read_from(target, topic, earliest, 5)
    assert got == list(range(earliest, earliest + 5))


def test_no_limit_set_keeps_everything(target):
    topic = _topic(target, {"retention.ms": "-1", "retention.bytes": "-1"})
    _produce(target, topic, 5)
    time.sleep(2 * CHECK_MS / 1000 + 1)
    assert _offset(target, topic, OffsetSpec.earliest()) == 0
    assert _read_from(target, topic, 0, 5) == [0, 1, 2, 3, 4]


def test_compact_only_topic_is_not_trimmed_by_time(target):
    topic = _topic(target, {"cleanup.policy": "compact", "retention.ms": "1000"})
    p = Producer({"bootstrap.servers": target.bootstrap})
    for i in range(5):
        p.produce(topic, key=b"k%d" % i, value=b"v", partition=0)
    assert p.flush(30) == 0
    time.sleep(3)
    assert _offset(target, topic, OffsetSpec.earliest()) == 0
