"""A KIP-932 share session outlives its member's leave, as on Kafka 4.3.1.

librdkafka's share consumer closes by leaving the group (ShareGroupHeartbeat epoch -1) and then sending
its last acknowledgements in a final ShareAcknowledge (epoch -1). Kafka keeps the share session apart
from the membership, so those acknowledgements count; the gateway dropped the session at the leave and
answered SHARE_SESSION_NOT_FOUND (librdkafka's 0170/0171 logged it 16-18 times per run).

Raw requests, first run against Kafka 4.3.1 (KAFKA_REFERENCE_BOOTSTRAP=host:port, group.share.enable).
"""
from __future__ import annotations

import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from kafka_target import target  # noqa: F401 - the fixture

FIND_COORDINATOR, METADATA, HEARTBEAT, SHARE_FETCH, SHARE_ACK = 10, 3, 76, 78, 79
ZERO = bytes(16)
ACCEPT = 1
NONE, INVALID_RECORD_STATE, SHARE_SESSION_NOT_FOUND = 0, 121, 122
LOADING = (14, 15, 16)  # a fresh Kafka's coordinator is still coming up


def fresh(bootstrap: str, records: int) -> tuple[str, str]:
    topic, group = f"ssl-{uuid.uuid4().hex[:8]}", f"sslg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        p.produce(topic, b"v%d" % i)
    assert p.flush(30) == 0
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    for f in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                             incremental_configs=[entry])]).values():
        f.result(30)
    return topic, group


def topic_id(c, topic: str) -> bytes:
    for _ in range(50):
        t = c.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": ZERO}],
                                  "allow_auto_topic_creation": False})["topics"][0]
        if t["error_code"] == NONE and bytes(t["topic_id"]) != ZERO:
            return bytes(t["topic_id"])
        time.sleep(0.2)
    raise AssertionError(f"no topic id for {topic}")


def heartbeat(c, group: str, member: str, epoch: int, topics=None) -> dict:
    for _ in range(100):
        c.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        r = c.call(HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
                                  "subscribed_topic_names": topics})
        if r["error_code"] not in LOADING:
            return r
        time.sleep(0.3)
    raise AssertionError(f"heartbeat: {r}")


def share_fetch(c, group: str, member: str, epoch: int, tid: bytes, max_bytes: int = 1 << 20) -> dict:
    return c.call(SHARE_FETCH, 1, {
        "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": 500, "min_bytes": 1,
        "max_bytes": max_bytes, "max_records": 500, "batch_size": 500, "forgotten_topics_data": [],
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}]})


def acquired(resp: dict) -> list[tuple[int, int]]:
    return [(a["first_offset"], a["last_offset"]) for t in resp["responses"] for p in t["partitions"]
            for a in p["acquired_records"]]


def acknowledge(c, group: str, member: str, epoch: int, tid: bytes, offset: int) -> tuple[int, list[int]]:
    batch = {"first_offset": offset, "last_offset": offset, "acknowledge_types": [ACCEPT]}
    r = c.call(SHARE_ACK, 1, {"group_id": group, "member_id": member, "share_session_epoch": epoch, "topics": [
        {"topic_id": tid, "partitions": [{"partition_index": 0, "acknowledgement_batches": [batch]}]}]})
    return r["error_code"], [p["error_code"] for t in r["responses"] for p in t["partitions"]]


def test_acknowledgements_after_leaving_the_group_count(target):  # noqa: F811 - the fixture
    topic, group = fresh(target.bootstrap, 3)
    c = target.raw()
    try:
        tid = topic_id(c, topic)
        member = uuid.uuid4().hex[:22]
        assert heartbeat(c, group, member, 0, [topic])["error_code"] == NONE
        epoch, got = 0, []
        while not got and epoch < 40:  # Kafka loads the share partition's state first
            resp = share_fetch(c, group, member, epoch, tid)
            assert resp["error_code"] == NONE
            got, epoch = acquired(resp), epoch + 1
            time.sleep(0 if got else 0.3)
        assert got == [(0, 2)]
        left = heartbeat(c, group, member, -1)
        assert (left["error_code"], left["member_epoch"]) == (NONE, -1)
        # the session is still there: an acknowledgement at its next epoch, then the final one, count
        assert acknowledge(c, group, member, epoch, tid, 0) == (NONE, [NONE])
        assert acknowledge(c, group, member, -1, tid, 1) == (NONE, [NONE])
        # the final epoch closed it
        assert acknowledge(c, group, member, -1, tid, 2)[0] == SHARE_SESSION_NOT_FOUND
        assert share_fetch(c, group, member, epoch + 1, tid)["error_code"] == SHARE_SESSION_NOT_FOUND
        # its close released what it still held (offset 2) and kept what it accepted (0 and 1)
        other = target.raw()
        try:
            second = uuid.uuid4().hex[:22]
            assert heartbeat(other, group, second, 0, [topic])["error_code"] == NONE
            assert acquired(share_fetch(other, group, second, 0, tid)) == [(2, 2)]
        finally:
            other.close()
    finally:
        c.close()


def test_share_fetch_with_max_bytes_zero_acquires_nothing(target):  # noqa: F811 - the fixture
    """librdkafka 0180's fetch.max.bytes=0: Kafka answers no records (the gateway sent the first batch)."""
    topic, group = fresh(target.bootstrap, 3)
    c, member = target.raw(), uuid.uuid4().hex[:22]
    try:
        assert heartbeat(c, group, member, 0, [topic])["error_code"] == NONE
        tid = topic_id(c, topic)
        for epoch in range(4):
            resp = share_fetch(c, group, member, epoch, tid, max_bytes=0)
            assert resp["error_code"] == NONE and acquired(resp) == []
        while not acquired(resp) and epoch < 40:  # the records are there: a fetch with room gets them
            epoch += 1
            resp = share_fetch(c, group, member, epoch, tid)
        assert acquired(resp) == [(0, 2)]
    finally:
        c.close()
