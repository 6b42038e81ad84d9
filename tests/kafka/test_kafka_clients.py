"""Stock Kafka clients (confluent-kafka / librdkafka and kafka-python) against a real gateway."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
from shard_aware import broker_ids

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _topic(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _records(n: int):
    """Keys (text, binary, none), binary/repeated/null header values, null values."""
    out = []
    for i in range(n):
        key = [f"key-{i}".encode(), bytes([0xFF, i % 256]), None][i % 3]
        value = None if i % 5 == 4 and key is not None else f"value-{i}".encode() * (1 + i % 3)
        headers = [("h", f"{i}".encode()), ("bin", b"\x00\x01\xfe"), ("h", b"again"), ("nul", None)]
        out.append((key, value, headers))
    return out


def _consume_all(consumer, n: int, timeout: float = 30.0):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append(msg)
    return got


def _confluent_consumer(bootstrap: str, group: str | None = None, **extra) -> Consumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group or _topic("g"), "auto.offset.reset": "earliest",
            "enable.auto.commit": False, **extra}
    return Consumer(conf)


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_roundtrip_every_codec(gateway, codec):
    topic = _topic()
    sent = _records(30)
    p = Producer({"bootstrap.servers": gateway.kafka_bootstrap, "compression.type": codec, "linger.ms": 20})
    for key, value, headers in sent:
        p.produce(topic, value=value, key=key, headers=headers, partition=1, timestamp=1_700_000_000_000)
    assert p.flush(30) == 0
    c = _confluent_consumer(gateway.kafka_bootstrap)
    c.assign([TopicPartition(topic, 1, 0)])
    got = _consume_all(c, len(sent))
    c.close()
    assert [m.offset() for m in got] == list(range(len(sent)))
    assert [(m.key(), m.value(), m.headers()) for m in got] == [
        (k, v, [(hk, hv) for hk, hv in h]) for k, v, h in sent]
    assert all(m.timestamp()[1] == 1_700_000_000_000 for m in got)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_roundtrip_every_codec(gateway, codec):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP

    topic = _topic()
    sent = [(k, v, [(hk, hv) for hk, hv in h if hv is not None]) for k, v, h in _records(20)]  # no null headers
    producer = KafkaProducer(bootstrap_servers=gateway.kafka_bootstrap, compression_type=codec, linger_ms=10)
    for key, value, headers in sent:
        producer.send(topic, value=value, key=key, headers=headers, partition=0)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=gateway.kafka_bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    consumer.assign([KTP(topic, 0)])
    got = []
    for rec in consumer:
        got.append(rec)
        if len(got) == len(sent):
            break
    consumer.close()
    assert [(r.key, r.value, [tuple(h) for h in r.headers]) for r in got] == [
        (k, v, [(hk, hv) for hk, hv in h]) for k, v, h in sent]


def test_kafka_python_to_confluent_cross_client(gateway):
    """kafka-python's idempotent producer (its default) and a librdkafka consumer agree on everything."""
    from kafka import KafkaProducer

    topic = _topic()
    producer = KafkaProducer(bootstrap_servers=gateway.kafka_bootstrap, acks="all")
    for i in range(50):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=2)
    producer.flush(30)
    producer.close()
    c = _confluent_consumer(gateway.kafka_bootstrap)
    c.assign([TopicPartition(topic, 2, 0)])
    got = _consume_all(c, 50)
    c.close()
    assert [(m.key(), m.value()) for m in got] == [(b"k%d" % i, b"v%d" % i) for i in range(50)]


def test_assign_and_seek_inside_a_batch(gateway):
    topic = _topic()
    p = Producer({"bootstrap.servers": gateway.kafka_bootstrap, "linger.ms": 50})
    for i in range(20):
        p.produce(topic, value=b"m%d" % i, partition=0)
    assert p.flush(30) == 0
    c = _confluent_consumer(gateway.kafka_bootstrap)
    c.assign([TopicPartition(topic, 0, 13)])
    got = _consume_all(c, 7)
    assert [m.value() for m in got] == [b"m%d" % i for i in range(13, 20)]
    c.seek(TopicPartition(topic, 0, 5))
    again = _consume_all(c, 3)
    c.close()
    assert [m.offset() for m in again] == [5, 6, 7]
    lo, hi = Consumer({"bootstrap.servers": gateway.kafka_bootstrap, "group.id": "wm"}).get_watermark_offsets(
        TopicPartition(topic, 0), timeout=10)
    assert (lo, hi) == (0, 20)


def test_offsets_for_times(gateway):
    topic = _topic()
    base = int(time.time() * 1000) - 60_000
    p = Producer({"bootstrap.servers": gateway.kafka_bootstrap, "linger.ms": 20})
    for i in range(10):
        p.produce(topic, value=b"x%d" % i, partition=0, timestamp=base + i * 1000)
    assert p.flush(30) == 0
    c = _confluent_consumer(gateway.kafka_bootstrap)
    found = c.offsets_for_times([TopicPartition(topic, 0, base + 3500)],
                                timeout=10)
    assert found[0].offset == 4
    after = c.offsets_for_times([TopicPartition(topic, 0, base + 10 ** 9)], timeout=10)
    c.close()
    assert after[0].offset == -1  # nothing at or after that time: -1 (librdkafka maps it to the end: -1)


def test_kafka_python_offsets_for_times_and_end_offsets(gateway):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KTP

    topic = _topic()
    base = int(time.time() * 1000) - 60_000
    producer = KafkaProducer(bootstrap_servers=gateway.kafka_bootstrap)
    for i in range(5):
        producer.send(topic, value=b"x", partition=0, timestamp_ms=base + i * 1000)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=gateway.kafka_bootstrap)
    tp = KTP(topic, 0)
    res = consumer.offsets_for_times({tp: base + 2000})
    assert res[tp].offset == 2 and res[tp].timestamp == base + 2000
    assert consumer.offsets_for_times({tp: base + 10 ** 8})[tp] is None
    assert consumer.end_offsets([tp])[tp] == 5 and consumer.beginning_offsets([tp])[tp] == 0
    consumer.close()


def test_admin_create_describe_alter_delete(gateway):
    admin = AdminClient({"bootstrap.servers": gateway.kafka_bootstrap})
    topic = _topic("admin")
    fs = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1,
                                       config={"cleanup.policy": "compact", "retention.ms": "1000"})])
    fs[topic].result(10)
    again = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    with pytest.raises(KafkaException) as exc:
        again[topic].result(10)
    assert exc.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    md = admin.list_topics(timeout=10)
    assert len(md.topics[topic].partitions) == 3
    configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    entries = list(configs.values())[0].result(10)
    assert entries["cleanup.policy"].value == "compact" and entries["retention.ms"].value == "1000"
    assert entries["max.message.bytes"].value == str(4 * 1024 * 1024)
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(10)
    assert len(admin.list_topics(timeout=10).topics[topic].partitions) == 5
    shrink = admin.create_partitions([NewPartitions(topic, 2)])
    with pytest.raises(KafkaException):
        shrink[topic].result(10)
    admin.delete_topics([topic])[topic].result(10)
    assert topic not in admin.list_topics(timeout=10).topics
    missing = admin.delete_topics([topic])
    with pytest.raises(KafkaException):
        missing[topic].result(10)


def test_kafka_python_admin(gateway):
    from kafka.admin import KafkaAdminClient, NewTopic as KNewTopic

    admin = KafkaAdminClient(bootstrap_servers=gateway.kafka_bootstrap)
    topic = _topic("kpadmin")
    admin.create_topics([KNewTopic(topic, 2, 1)])
    assert topic in admin.list_topics()
    described = admin.describe_topics([topic])
    assert len(described[0]["partitions"]) == 2
    admin.delete_topics([topic])
    assert topic not in admin.list_topics()
    admin.close()


def test_auto_create_uses_default_partitions(gateway_factory):
    g = gateway_factory(extra_args=["--default-partitions", "3"])
    md = AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics(timeout=10)
    assert md.brokers and sorted(md.brokers) == broker_ids()
    p = Producer({"bootstrap.servers": g.kafka_bootstrap})
    topic = _topic()
    p.produce(topic, value=b"x")
    assert p.flush(30) == 0
    md = AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics(topic, timeout=10)
    assert len(md.topics[topic].partitions) == 3


def test_auto_create_can_be_turned_off(gateway_factory):
    g = gateway_factory(extra_args=["--no-auto-create-topics"])
    md = AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics("absent-topic", timeout=10)
    assert md.topics["absent-topic"].error is not None
