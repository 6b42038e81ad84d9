"""kafka-python helpers for the Spark tests (third-party client on the other side of the gateway)."""
from __future__ import annotations

import os
import time

import waiting
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewPartitions, NewTopic

# SPARK_TEST_BROKER=kafka: run the same tests against a real Apache Kafka (bench/brokers.py).
AGAINST_KAFKA = os.environ.get("SPARK_TEST_BROKER") == "kafka"
# SPARK_TEST_BOOTSTRAP=HOST:PORT (+ SPARK_TEST_NAMESRV): a gateway that is already running (debugging).
EXTERNAL = os.environ.get("SPARK_TEST_BOOTSTRAP")


def create_topic(bootstrap: str, name: str, partitions: int = 1, configs: dict | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])
    finally:
        admin.close()


def create_native_topic(namesrv: str, name: str, queues: int = 1) -> None:
    """Create a topic through the RocketMQ side (how %DLQ%/%RETRY% topics come to exist)."""
    from client import Admin

    with Admin(namesrv) as admin:
        admin.create_topic(name, queues=queues)


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_partitions({name: NewPartitions(total_count=total)})
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, records: list[dict]) -> list[dict]:
    """Send records ({key, value, headers, partition, timestamp_ms}) with kafka-python's default
    (idempotent) producer; return each record with the partition/offset/timestamp the broker gave."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        futures = [producer.send(topic, **r) for r in records]
        producer.flush()
        out = []
        for r, f in zip(records, futures):
            md = f.get(timeout=30)
            out.append({**r, "partition": md.partition, "offset": md.offset,
                        "timestamp_ms": r.get("timestamp_ms") or md.timestamp})
        return out
    finally:
        producer.close()


def consume_all(bootstrap: str, topic: str, timeout_s: float = 60.0) -> list:
    """Every record of `topic` (all partitions, beginning to the current end) via kafka-python."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        out: list = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < end[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumed {len(out)} records of {topic}, end offsets {end}")
            for batch in consumer.poll(timeout_ms=500).values():
                out.extend(batch)
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def wait_until(predicate, timeout_s: float = 120.0, what: str = "condition"):
    """Poll until predicate() is truthy (a bound on waiting, not an assertion on speed)."""
    return waiting.wait_for(predicate, timeout_s, what, interval=0.5, error=TimeoutError)
