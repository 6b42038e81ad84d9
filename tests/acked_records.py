"""Records a real client had acknowledged, and every record a topic holds: for tests that check
nothing acknowledged is lost across a restart (librdkafka acks=all to write, kafka-python to read)."""
from __future__ import annotations

import os
import time


def produce_acked(bootstrap: str, topic: str, count: int, prefix: bytes = b"r", value_bytes: int = 32) -> list[bytes]:
    """Send `count` records with acks=all; the values the broker acknowledged (asserts none failed)."""
    from confluent_kafka import Producer

    acked: list[bytes] = []
    failed: list = []

    def report(err, msg):
        (failed if err is not None else acked).append(err or msg.value())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "message.timeout.ms": 20000})
    for i in range(count):
        producer.produce(topic, value=prefix + b"-%d-" % i + os.urandom(value_bytes), on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0 and not failed, failed
    return acked


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0) -> list[bytes]:
    """Every record of every partition of `topic`, from the beginning to the end offsets."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        assert tps, f"topic {topic} not found"
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"read {len(got)} records, the end offsets say {ends}"
            for records in consumer.poll(500).values():
                got += [r.value for r in records]
        return got
    finally:
        consumer.close()


def read_committed(bootstrap: str, topic: str, partitions: int, want: int, timeout: float = 20.0) -> list:
    """(partition, offset, value) a read_committed librdkafka consumer gets from offset 0 of the
    topic's first `partitions` partitions, polling on a little after `want` (to see extra ones)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-" + os.urandom(4).hex(),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    try:
        return [(m.partition(), m.offset(), m.value().decode()) for m in poll_past(c, want, timeout)]
    finally:
        c.close()


def poll_past(consumer, want: int, timeout: float, skip_errors: bool = False) -> list:
    """The messages `consumer` polls until `want` arrived and a little longer (to catch extra ones),
    or `timeout` passes. An error message fails the caller's test unless `skip_errors`."""
    got: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(got) <= want:
        m = consumer.poll(0.3 if len(got) < want else 1.5)
        if m is None:
            if len(got) >= want:
                break
            continue
        if m.error() is not None:
            assert skip_errors, m.error()
            continue
        got.append(m)
    return got
