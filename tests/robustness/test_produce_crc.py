"""Kafka Produce with a RecordBatch whose CRC-32C does not match: that partition answers
CORRUPT_MESSAGE and stores nothing, the other partitions of the same request are stored.
Checked against a real Kafka 4.x first (KAFKA_REFERENCE_BOOTSTRAP=host:port, as tests/kafka)."""
from __future__ import annotations

import os
import time
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from codec.kafka import records
from tests.kafka.kafka_raw import RawClient

PRODUCE, LIST_OFFSETS = 0, 2
CORRUPT_MESSAGE = 2
REFERENCE = os.environ.get("KAFKA_REFERENCE_BOOTSTRAP")


def end_offset(raw: RawClient, topic: str, partition: int) -> int:
    resp = raw.call(LIST_OFFSETS, 7, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
    return resp["topics"][0]["partitions"][0]["offset"]


def flip_one_byte(batch: bytes, at: int) -> bytes:
    out = bytearray(batch)
    out[at] ^= 0x10
    return bytes(out)


def test_a_batch_with_a_wrong_crc_is_corrupt_message_for_its_partition_only(gateway_factory):
    bootstrap = REFERENCE or gateway_factory().kafka_bootstrap
    topic = f"crc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    time.sleep(1)  # Kafka applies a new topic's metadata asynchronously
    good = records.build_batch([(1000 + i, b"k%d" % i, b"v%d" % i, []) for i in range(3)], base_timestamp=1000)
    in_records = flip_one_byte(good, len(good) - 2)  # a value byte: only the CRC can tell
    in_header = flip_one_byte(good, records.PRODUCER_ID_AT + 3)  # a header field the CRC covers
    raw = RawClient(bootstrap, timeout=30)
    resp = raw.call(PRODUCE, 9, {"acks": -1, "timeout_ms": 10000, "topic_data": [{"name": topic, "partition_data": [
        {"index": 0, "records": good}, {"index": 1, "records": in_records}, {"index": 2, "records": in_header}]}]})
    codes = {p["index"]: p["error_code"] for p in resp["responses"][0]["partition_responses"]}
    assert codes == {0: 0, 1: CORRUPT_MESSAGE, 2: CORRUPT_MESSAGE}
    assert [end_offset(raw, topic, p) for p in range(3)] == [3, 0, 0]
