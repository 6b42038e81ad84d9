"""OffsetForLeaderEpoch v2-v4 (what consumers ask after a leader change to validate their position),
raw, as a single Kafka 4.3.1 broker answers: its one epoch (0) ends at the log end offset, a later or an
undefined epoch is unknown (-1, -1), a current leader epoch newer than the leader's is
UNKNOWN_LEADER_EPOCH, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION. Run first against Kafka
(KAFKA_REFERENCE_BOOTSTRAP, see kafka_target), then the gateway. Then Kafka's epoch-cache rule for
several epochs (a cluster's replicated queues), in process."""
from __future__ import annotations

import contextlib
import uuid

import pytest
from kafka_raw import RawClient
from kafka_target import eventually, target  # noqa: F401 (fixture)
from shard_aware import leader_address

from codec.kafka import records
from gateway.kafka.leader_epochs import epoch_end

PRODUCE, OFFSET_FOR_LEADER_EPOCH, CREATE_TOPICS, METADATA = 0, 23, 19, 3
NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_LEADER_EPOCH = 0, 3, 75


def _topic(client, records_count: int, bootstrap: str) -> str:
    name = f"ofle-{uuid.uuid4().hex[:8]}"
    body = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 10000, "validate_only": False}
    assert client.call(CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == NONE

    def ready():
        md = client.call(METADATA, 12, {"topics": [{"name": name, "topic_id": bytes(16)}],
                                        "allow_auto_topic_creation": False})["topics"][0]
        assert md["error_code"] == NONE and md["partitions"][0]["leader_id"] >= 0
    eventually(ready)
    if records_count:
        batch = records.build_batch([(1000 + i, None, b"v", []) for i in range(records_count)], base_timestamp=1000)
        with _leader(bootstrap, name) as leader:
            resp = leader.call(PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
            {"name": name, "partition_data": [{"index": 0, "records": batch}]}]})
        assert resp["responses"][0]["partition_responses"][0]["error_code"] == NONE
    return name


@contextlib.contextmanager
def _leader(bootstrap: str, topic: str):
    """A raw client at the leader of the topic's partition 0 (records and epochs are the leader's)."""
    client = RawClient(leader_address(bootstrap, topic, 0))
    try:
        yield client
    finally:
        client.close()


def _ask(client, version: int, topic: str, leader_epoch: int, current: int = -1, partition: int = 0) -> tuple:
    resp = client.call(OFFSET_FOR_LEADER_EPOCH, version, {"replica_id": -1, "topics": [
        {"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": current,
                                         "leader_epoch": leader_epoch}]}]})
    p = resp["topics"][0]["partitions"][0]
    assert resp["topics"][0]["topic"] == topic and p["partition"] == partition
    return p["error_code"], p["leader_epoch"], p["end_offset"]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_one_epoch_ends_at_the_log_end(target, version):
    c = target.raw()
    full, empty = _topic(c, 3, target.bootstrap), _topic(c, 0, target.bootstrap)
    with _leader(target.bootstrap, full) as f, _leader(target.bootstrap, empty) as e:
        assert _ask(f, version, full, 0) == (NONE, 0, 3)
        assert _ask(f, version, full, 0, current=0) == (NONE, 0, 3)
        assert _ask(e, version, empty, 0) == (NONE, 0, 0)
        assert _ask(f, version, full, 7) == (NONE, -1, -1)  # a later epoch than any
        assert _ask(f, version, full, -1) == (NONE, -1, -1)
        assert _ask(f, version, full, 0, current=3) == (UNKNOWN_LEADER_EPOCH, -1, -1)
        assert _ask(f, version, full, 0, partition=5) == (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert _ask(c, version, f"none-{uuid.uuid4().hex[:8]}", 0)[0] == UNKNOWN_TOPIC_OR_PARTITION
    c.close()


def test_several_epochs_as_kafkas_cache():
    pairs = [(2, 0), (4, 10), (7, 25)]
    assert epoch_end(pairs, 7, 40) == (7, 40)  # the latest: up to the log end
    assert epoch_end(pairs, 4, 40) == (4, 25)  # ends where the next starts
    assert epoch_end(pairs, 5, 40) == (4, 25)  # unknown in between: the largest below it
    assert epoch_end(pairs, 1, 40) == (1, 0)  # older than all: the first known epoch's start
    assert epoch_end(pairs, 8, 40) == (-1, -1)  # newer than the leader's
    assert epoch_end(pairs, -1, 40) == (-1, -1)
