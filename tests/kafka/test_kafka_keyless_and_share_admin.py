"""Two answers third-party suites check (franz-go TestShareGroupOffsetsAdmin, librdkafka 0011):

- a Produce batch with keyless records to a compacted topic is refused INVALID_RECORD with one KIP-467
  `record_errors` entry per keyless record (librdkafka fails just those records INVALID_RECORD and
  the others of the batch _INVALID_DIFFERENT_RECORD);
- AlterShareGroupOffsets on a group id nobody used yet creates the empty share group and sets its
  start offset (not GROUP_ID_NOT_FOUND); DescribeShareGroupOffsets then reports it.

Run against a real Kafka 4.x first (KAFKA_REFERENCE_BOOTSTRAP, a broker with share groups on).
"""
from __future__ import annotations

import time
import uuid

import pytest
from kafka_raw import RawClient
from kafka_target import admin, eventually, new_topic, target  # noqa: F401 (fixtures)
from shard_aware import raw_leader

from codec.kafka import records

PRODUCE, FIND_COORDINATOR, DESCRIBE_SHARE_OFFSETS, ALTER_SHARE_OFFSETS = 0, 10, 90, 91
INVALID_RECORD, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 87, 3, 6
COORDINATOR_ERRORS = (14, 15, 16)  # loading, not available, not coordinator (Kafka while it starts up)


def _topic(admin, configs: dict | None = None) -> str:
    return new_topic(admin, "ks", configs)


def _produce(target, topic: str, keys: list[bytes | None]) -> dict:
    now = int(time.time() * 1000)
    batch = records.build_batch([(now, k, b"v", []) for k in keys], base_timestamp=now)
    c = RawClient(raw_leader(target.bootstrap, topic), timeout=60)  # partition 0's leader (one, or its shard)

    def answered() -> dict:
        body = {"acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
        p = c.call(PRODUCE, 9, body)["responses"][0]["partition_responses"][0]
        assert p["error_code"] not in (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER), p
        return p
    try:
        return eventually(answered)
    finally:
        c.close()


def test_keyless_records_on_a_compacted_topic_get_record_errors(target, admin):
    topic = _topic(admin, {"cleanup.policy": "compact"})
    refused = _produce(target, topic, [None, b"k1", b"k2", None, b"k4"])
    assert refused["error_code"] == INVALID_RECORD
    assert [e["batch_index"] for e in refused["record_errors"]] == [0, 3]
    why = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert [e["batch_index_error_message"] for e in refused["record_errors"]] == [why, why]
    assert refused["error_message"] == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first three "
        f"errors at most: [RecordError(batchIndex=0, message='{why}'), RecordError(batchIndex=3, message='{why}')]")
    assert _produce(target, topic, [b"k"])["error_code"] == 0


def _share_call(target, api: int, body: dict) -> dict:
    c = target.raw()

    def answered() -> dict:
        found = c.call(FIND_COORDINATOR, 4, {"key": "", "key_type": 0, "coordinator_keys": [body["group_id"]]})
        assert found["coordinators"][0]["error_code"] == 0, found
        resp = c.call(api, 0, body)
        assert resp["error_code"] not in COORDINATOR_ERRORS, resp
        return resp
    try:
        return eventually(answered, timeout=60)
    finally:
        c.close()


def test_alter_share_group_offsets_creates_an_unknown_group(target, admin):
    topic = _topic(admin)
    assert _produce(target, topic, [b"a", b"b", b"c"])["error_code"] == 0
    group = f"sg-{uuid.uuid4().hex[:8]}"
    altered = _share_call(target, ALTER_SHARE_OFFSETS, {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 2}]}]})
    assert altered["error_code"] == 0, altered
    assert [(t["topic_name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
            for t in altered["responses"]] == [(topic, [(0, 0)])]
    c = target.raw()
    try:
        described = eventually(lambda: _described(c, group, topic))
    finally:
        c.close()
    assert (described["start_offset"], described["error_code"]) == (2, 0)


def _described(c, group: str, topic: str) -> dict:
    resp = c.call(DESCRIBE_SHARE_OFFSETS, 0, {"groups": [
        {"group_id": group, "topics": [{"topic_name": topic, "partitions": [0]}]}]})
    part = resp["groups"][0]["topics"][0]["partitions"][0]
    assert part["start_offset"] == 2, resp  # Kafka writes the share state asynchronously
    return part
