"""Kafka clients read messages written by the native RocketMQ client, per the mapping contract."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_target import first_record
from shard_aware import partition_leaders, rocketmq_queue


def read_from_start(gateway, topic: str, partition: int, count: int) -> list:
    """Up to `count` messages of one partition from offset 0 (confluent-kafka, 30 s at most)."""
    c = Consumer({"bootstrap.servers": gateway.kafka_bootstrap, "group.id": "interop"})
    c.assign([TopicPartition(topic, partition, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    c.close()
    return got


def test_native_message_reaches_kafka_consumer_with_headers_and_key(gateway):
    from client.model import Message, MessageQueue
    from client.sync import Producer

    topic = f"interop-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": gateway.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(10)
    broker, queue = rocketmq_queue(partition_leaders(gateway.kafka_bootstrap, topic), 1)  # Kafka partition 1
    producer = Producer(f"pg-{uuid.uuid4().hex[:6]}", gateway.namesrv).start()
    try:
        for i in range(3):
            producer.send(Message(topic, b"native-%d" % i, tags="TagA", keys=f"order-{i}",
                                  properties={"color": "blue"}), queue=MessageQueue(topic, broker, queue))
    finally:
        producer.shutdown()
    got = read_from_start(gateway, topic, 1, 3)
    assert [m.offset() for m in got] == [0, 1, 2]
    assert [m.value() for m in got] == [b"native-0", b"native-1", b"native-2"]
    assert [m.key() for m in got] == [b"order-0", b"order-1", b"order-2"]
    headers = dict(got[0].headers())
    assert headers["TAGS"] == b"TagA" and headers["KEYS"] == b"order-0" and headers["color"] == b"blue"


def test_kafka_delay_header_delays_the_batch(gateway):
    from confluent_kafka import Producer

    topic = f"delay-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": gateway.kafka_bootstrap})
    p.produce(topic, value=b"later", key=b"k", headers=[("DELAY", b"2")], partition=0)  # level 2 = 5 s
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": gateway.kafka_bootstrap, "group.id": "delay"})
    # not visible yet: offset 0 (the one the produce response gave) holds no record (docs/mapping.md)
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 1)
    c.close()
    got = first_record(gateway.kafka_bootstrap, topic, "delay")
    assert got is not None and got.value() == b"later" and got.key() == b"k" and got.offset() == 1


def test_kafka_clients_read_native_dlq_topic(gateway):
    """RocketMQ names dead-letter topics `%DLQ%<group>`: Kafka clients must list and read them,
    while Kafka itself still refuses to create such a name."""
    from kafka import KafkaConsumer

    from client import Admin, Message, Producer

    dlq = f"%DLQ%g-{uuid.uuid4().hex[:8]}"
    with Admin(gateway.namesrv) as admin:
        admin.create_topic(dlq, queues=1)
    with Producer(f"pg-{uuid.uuid4().hex[:6]}", gateway.namesrv) as p:
        for i in range(5):
            p.send(Message(dlq, b"dead-%d" % i, tags="T", keys=f"k{i}"))

    admin = AdminClient({"bootstrap.servers": gateway.kafka_bootstrap})
    assert dlq in admin.list_topics(timeout=10).topics
    assert admin.list_topics(topic=dlq, timeout=10).topics[dlq].error is None
    refused = admin.create_topics([NewTopic("%DLQ%new", num_partitions=1, replication_factor=1)])
    with pytest.raises(KafkaException) as exc:
        refused["%DLQ%new"].result(10)
    assert exc.value.args[0].code() == KafkaError.TOPIC_EXCEPTION

    got = read_from_start(gateway, dlq, 0, 5)
    assert [(m.offset(), m.value(), m.key()) for m in got] == [(i, b"dead-%d" % i, b"k%d" % i) for i in range(5)]

    # kafka-python refuses such names in assign()/subscribe() on its own side, but lists them.
    kc = KafkaConsumer(bootstrap_servers=gateway.kafka_bootstrap)
    try:
        assert dlq in kc.topics()
        assert kc.partitions_for_topic(dlq) == {0}
    finally:
        kc.close()
