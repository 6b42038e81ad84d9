"""ListOffsets by timestamp and the special timestamps as Kafka 4.x answers them: the first record
(by offset) whose CreateTime reaches the time, also one ahead of the broker's clock; MAX_TIMESTAMP
(-3) over the whole partition; EARLIEST_LOCAL (-4), LATEST_TIERED (-5), EARLIEST_PENDING_UPLOAD (-6)
without tiered storage; LogAppendTime topics by their append time. Through the raw protocol (v7-v11),
confluent-kafka, kafka-python and Java (GetOffsetShell). Checked against a real Kafka 4.x first."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_raw import RawClient
from kafka_target import eventually, target  # noqa: F401 (fixture)
from shard_aware import leader_address

from compat.jvm import run_tool

LIST_OFFSETS = 2
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"


def _topic(target, configs: dict | None = None) -> str:
    name = f"lo-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs or {})])[name].result(15)
    return name


def _produce(target, topic: str, stamps: list[int]) -> None:
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    for i, ts in enumerate(stamps):
        p.produce(topic, value=b"v%d" % i, partition=0, timestamp=ts)
        p.flush(10)
    assert p.flush(30) == 0


@pytest.fixture(scope="module")
def skewed(target):
    """A partition whose CreateTimes go back and forth, two of them 100 s ahead of the clock."""
    now = int(time.time() * 1000)
    topic = _topic(target)
    _produce(target, topic, [now - 5000, now + 100_000, now - 1000, now + 100_000, now])
    return topic, now


def _raw(target, topic: str, version: int, ts: int) -> tuple[int, int, int]:
    c = RawClient(leader_address(target.bootstrap, topic, 0), timeout=60)  # ListOffsets goes to the leader
    try:
        body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 5000,
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": ts}]}]}
        p = eventually(lambda: c.call(LIST_OFFSETS, version, body))["topics"][0]["partitions"][0]
        return p["error_code"], p["offset"], p["timestamp"]
    finally:
        c.close()


@pytest.mark.parametrize("version", [7, 8, 9, 10, 11])
def test_special_and_time_lookups(target, skewed, version):
    topic, now = skewed
    ahead = now + 100_000
    cases = {-1: (5, -1), -2: (0, -1), -3: (1, ahead), now - 3000: (1, ahead), now + 50_000: (1, ahead),
             now - 5000: (0, now - 5000), now + 200_000: (-1, -1)}
    if version >= 8:
        cases[-4] = (0, -1)
    if version >= 9:
        cases[-5] = (-1, -1)
    if version >= 11:
        cases[-6] = (-1, -1)
    got = {ts: _raw(target, topic, version, ts) for ts in cases}
    assert got == {ts: (0, *want) for ts, want in cases.items()}


def test_max_timestamp_follows_new_records(target):
    now = int(time.time() * 1000)
    topic = _topic(target)
    assert _raw(target, topic, 7, -3) == (0, -1, -1)  # empty
    _produce(target, topic, [now, now + 10])
    assert _raw(target, topic, 7, -3) == (0, 1, now + 10)
    _produce(target, topic, [now + 5, now + 20, now + 20])
    assert _raw(target, topic, 7, -3) == (0, 3, now + 20)  # the first record with the largest


def test_log_append_time_topic_uses_the_append_time(target):
    topic = _topic(target, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    _produce(target, topic, [before + 500_000, before - 500_000])
    err, offset, ts = _raw(target, topic, 7, before + 400_000)
    assert (err, offset, ts) == (0, -1, -1)  # the CreateTimes are ignored
    err, offset, ts = _raw(target, topic, 7, before - 1000)
    assert err == 0 and offset == 0 and before - 1000 <= ts <= int(time.time() * 1000) + 1000


def test_offsets_for_times_confluent(target, skewed):
    topic, now = skewed
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}"})
    try:
        got = c.offsets_for_times([TopicPartition(topic, 0, now + 50_000), ], timeout=15)
        assert got[0].offset == 1
        got = c.offsets_for_times([TopicPartition(topic, 0, now + 200_000)], timeout=15)
        assert got[0].offset == -1  # end: librdkafka reports OFFSET_END as -1
    finally:
        c.close()


def test_offsets_for_times_kafka_python(target, skewed):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    topic, now = skewed
    c = KafkaConsumer(bootstrap_servers=target.bootstrap)
    try:
        tp = KTP(topic, 0)
        got = c.offsets_for_times({tp: now + 50_000})[tp]
        assert (got.offset, got.timestamp) == (1, now + 100_000)
        assert c.offsets_for_times({tp: now + 200_000})[tp] is None
    finally:
        c.close()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return str(tmp_path_factory.mktemp("get-offsets"))


@pytest.mark.parametrize("time_arg,want", [("-3", 1), ("-4", 0), ("-1", 5), ("ahead", 1)])
def test_java_get_offset_shell(target, skewed, logs, time_arg, want):
    topic, now = skewed
    arg = str(now + 50_000) if time_arg == "ahead" else time_arg
    r = run_tool("kafkatools", GET_OFFSETS, ["--bootstrap-server", target.bootstrap, "--topic", topic, "--time", arg],
                 logs)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == [f"{topic}:0:{want}"], r.stdout
