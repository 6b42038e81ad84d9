"""What a Kafka 4.x broker shows clients about itself, and the gateway the same: `__consumer_offsets` as an
internal topic (listed once groups exist, produce refused with INVALID_TOPIC_EXCEPTION, hidden from
kafka-python's consumer topics()); the standard broker configs in DescribeConfigs (advertised.listeners
...); CreateTime bounds at Produce (`message.timestamp.after.max.ms` / `before.max.ms`: INVALID_TIMESTAMP
with per-record errors); ListOffsets' leader epoch. Checked against a real Kafka 4.x first
(KAFKA_REFERENCE_BOOTSTRAP)."""
from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import InvalidTimestampError, MessageSizeTooLargeError
from kafka_raw import RawClient, produce_body
from kafka_target import admin, eventually, new_topic, target  # noqa: F401 (fixtures)
from shard_aware import raw_leader

from codec.kafka import records

OFFSETS = "__consumer_offsets"
PRODUCE, LIST_OFFSETS, METADATA = 0, 2, 3
INVALID_TIMESTAMP, INVALID_TOPIC_EXCEPTION = 32, 17
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 3, 6
HOUR_MS = 3_600_000


def _topic(admin, configs: dict | None = None) -> str:
    return new_topic(admin, "bc", configs)


def _broker_configs(admin) -> dict:
    broker = admin.describe_cluster()["brokers"][0]["broker_id"]
    described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, broker)], config_filter="all")
    return {name: c["value"] for name, c in described["broker"][str(broker)].items()}


@pytest.fixture(scope="module")
def offsets_topic(target, admin):
    """Kafka creates its offsets topic with the first group; a group commits once here."""
    topic = _topic(admin)
    consumer = KafkaConsumer(topic, bootstrap_servers=target.bootstrap, group_id=f"bc-{uuid.uuid4().hex[:8]}",
                             consumer_timeout_ms=2000)
    list(consumer)
    consumer.commit()
    consumer.close()
    return topic


def _produce(target, topic: str, stamps: list[int], version: int = 9) -> dict:
    c = RawClient(raw_leader(target.bootstrap, topic), timeout=60)  # partition 0's leader (one, or its shard)
    batch = records.build_batch([(ts, b"k", b"v", []) for ts in stamps], base_timestamp=stamps[0])

    def answered() -> dict:  # once a new topic's leader is known (Kafka: NOT_LEADER_OR_FOLLOWER until then)
        p = c.call(PRODUCE, version, produce_body(topic, 0, batch))["responses"][0]["partition_responses"][0]
        assert p["error_code"] not in (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER), p
        return p
    part = eventually(answered)
    c.close()
    return part


def test_offsets_topic_is_listed_internal(target, admin, offsets_topic):
    count = int(_broker_configs(admin)["offsets.topic.num.partitions"])
    def listed() -> dict:  # every topic (Metadata with a null topic list)
        found = [t for t in admin.describe_topics() if t["name"] == OFFSETS]
        assert found and len(found[0]["partitions"]) == count, found
        return found[0]
    assert eventually(listed)["is_internal"] is True
    c = target.raw()
    named = c.call(METADATA, 12, {"topics": [{"name": OFFSETS, "topic_id": bytes(16)}],
                                  "allow_auto_topic_creation": False})["topics"][0]
    c.close()
    assert (named["error_code"], named["is_internal"], len(named["partitions"])) == (0, True, count)
    assert OFFSETS in admin.list_topics()
    consumer = KafkaConsumer(bootstrap_servers=target.bootstrap)
    assert offsets_topic in consumer.topics() and OFFSETS not in consumer.topics()  # internal topics excluded
    consumer.close()


def test_produce_to_the_offsets_topic_is_refused(target, offsets_topic):
    now = int(time.time() * 1000)
    assert _produce(target, OFFSETS, [now])["error_code"] == INVALID_TOPIC_EXCEPTION


def test_broker_configs_as_kafka_lists_them(target, admin):
    configs = _broker_configs(admin)
    host, port = target.bootstrap.rsplit(":", 1)
    assert f"PLAINTEXT://{host}:{port}" in configs["advertised.listeners"].split(",")
    assert f"PLAINTEXT://{host}:{port}" in configs["listeners"].split(",")
    assert "PLAINTEXT:PLAINTEXT" in configs["listener.security.protocol.map"].split(",")
    assert configs["log.message.timestamp.after.max.ms"] == str(HOUR_MS)
    assert configs["log.message.timestamp.before.max.ms"] == str((1 << 63) - 1)
    assert configs["log.message.timestamp.type"] == "CreateTime"
    assert configs["node.id"] == configs["broker.id"]
    assert "broker" in configs["process.roles"].split(",")
    assert configs["log.dirs"]


def test_create_time_ahead_of_the_broker_is_refused(target, admin):
    topic = _topic(admin)
    now = int(time.time() * 1000)
    assert _produce(target, topic, [now])["error_code"] == 0
    assert _produce(target, topic, [now - 10 * 24 * HOUR_MS])["error_code"] == 0  # no lower bound by default
    refused = _produce(target, topic, [now, now + 2 * HOUR_MS, now])
    assert refused["error_code"] == INVALID_TIMESTAMP
    assert refused["error_message"] == "One or more records have been rejected due to invalid timestamp"
    assert [e["batch_index"] for e in refused["record_errors"]] == [1]
    assert refused["record_errors"][0]["batch_index_error_message"].startswith(
        f"Timestamp {now + 2 * HOUR_MS} of message with offset 1 is out of range. The timestamp should be within [")
    assert _produce(target, topic, [now + 2 * HOUR_MS], version=7)["error_code"] == INVALID_TIMESTAMP
    producer = KafkaProducer(bootstrap_servers=target.bootstrap, retries=0)
    with pytest.raises(InvalidTimestampError):
        producer.send(topic, b"late", timestamp_ms=now + 2 * HOUR_MS).get(30)
    producer.close()


def test_topic_timestamp_bounds(target, admin):
    topic = _topic(admin, {"message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "1000"})
    now = int(time.time() * 1000)
    assert _produce(target, topic, [now - 120_000])["error_code"] == INVALID_TIMESTAMP
    assert _produce(target, topic, [now + 60_000])["error_code"] == INVALID_TIMESTAMP
    assert _produce(target, topic, [int(time.time() * 1000)])["error_code"] == 0


def test_log_append_time_topic_takes_any_create_time(target, admin):
    topic = _topic(admin, {"message.timestamp.type": "LogAppendTime"})
    assert _produce(target, topic, [int(time.time() * 1000) + 2 * HOUR_MS])["error_code"] == 0


def test_list_offsets_leader_epoch(target, admin):
    topic = _topic(admin)
    c = RawClient(raw_leader(target.bootstrap, topic), timeout=60)

    def answer(ts: int) -> tuple[int, int]:
        body = {"replica_id": -1, "isolation_level": 0,
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": ts,
                                                           "current_leader_epoch": -1}]}]}
        p = eventually(lambda: c.call(LIST_OFFSETS, 9, body))["topics"][0]["partitions"][0]
        assert p["error_code"] == 0, p
        return p["offset"], p["leader_epoch"]
    assert answer(-1) == (0, 0) and answer(-2) == (0, 0)  # an empty partition: its start, epoch 0
    assert answer(-3) == (-1, -1)  # MAX_TIMESTAMP of nothing
    now = int(time.time() * 1000)
    _produce(target, topic, [now])
    assert answer(-1) == (1, 0) and answer(now - 1) == (0, 0)
    assert answer(now + 60_000) == (-1, -1)  # no record that late
    c.close()


def test_topic_max_message_bytes_above_the_broker_default(target, admin):
    """A topic may raise max.message.bytes above the broker's message.max.bytes (franz-go's
    TestIssueFetchLargerThanBrokerMaxReadBytes sets 10 MiB): a 6 MiB record is stored and read back;
    a batch above the topic's limit is MESSAGE_TOO_LARGE."""
    topic = _topic(admin, {"max.message.bytes": str(10 << 20)})
    small = _topic(admin, {"max.message.bytes": str(1 << 20)})
    producer = KafkaProducer(bootstrap_servers=target.bootstrap, max_request_size=12 << 20, retries=0)
    value = bytes(range(256)) * (6 << 12)  # 6 MiB
    assert producer.send(topic, value).get(60).offset == 0
    with pytest.raises(MessageSizeTooLargeError):
        producer.send(small, value[:2 << 20]).get(60)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=target.bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=20_000, fetch_max_bytes=1 << 20, max_partition_fetch_bytes=1 << 20)
    got = next(iter(consumer))
    consumer.close()
    assert got.value == value
