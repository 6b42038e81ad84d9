"""Fetch v13-v18 and Produce v13 name topics by id (KIP-516), raw, every version Kafka 4.3 serves:
records produced by id come back fetched by id, the answers carry the id, an id no topic has (or a
deleted topic's) is UNKNOWN_TOPIC_ID per partition, and Produce v10-v12 (KIP-951 leader discovery
fields, KIP-890) still answer by name. Run first against Kafka 4.3.1 (KAFKA_REFERENCE_BOOTSTRAP, see
kafka_target), then the gateway."""
from __future__ import annotations

import uuid

import pytest
from kafka_raw import RawClient
from kafka_target import eventually, target  # noqa: F401 (fixture)

from codec.kafka import records

PRODUCE, FETCH, METADATA, CREATE_TOPICS, DELETE_TOPICS = 0, 1, 3, 19, 20
NONE, UNKNOWN_TOPIC_ID = 0, 100


def _create(client, name: str) -> bytes:
    body = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 10000, "validate_only": False}
    t = client.call(CREATE_TOPICS, 7, body)["topics"][0]
    assert t["error_code"] == NONE

    def known():  # Kafka applies a new topic's metadata asynchronously
        md = client.call(METADATA, 12, {"topics": [{"name": name, "topic_id": bytes(16)}],
                                        "allow_auto_topic_creation": False})["topics"][0]
        assert md["error_code"] == NONE and md["partitions"][0]["leader_id"] >= 0
    eventually(known)
    return bytes(t["topic_id"])


def _at_leader(client, name: str):
    """A client connected to the leader of `name`'s partition 0: `client` itself on one process,
    else one to the shard that leads it (the others answer NOT_LEADER_OR_FOLLOWER, as Kafka)."""
    md = client.call(METADATA, 12, {"topics": [{"name": name, "topic_id": bytes(16)}],
                                    "allow_auto_topic_creation": False})
    leader = md["topics"][0]["partitions"][0]["leader_id"]
    broker = next(b for b in md["brokers"] if b["node_id"] == leader)
    if (broker["host"], broker["port"]) == client.sock.getpeername()[:2]:
        return client
    client.close()
    return RawClient(f"{broker['host']}:{broker['port']}", timeout=60)


def _batch(values: list[bytes]) -> bytes:
    return records.build_batch([(1000 + i, None, v, []) for i, v in enumerate(values)], base_timestamp=1000)


def _produce(client, version: int, topic: dict, values: list[bytes]) -> tuple[dict, dict]:
    """(the answer's topic entry, its partition entry) of producing `values` to partition 0."""
    resp = client.call(PRODUCE, version, {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
        dict(topic, partition_data=[{"index": 0, "records": _batch(values)}])]})
    t = resp["responses"][0]
    return t, t["partition_responses"][0]


def _fetch(client, version: int, topic: dict, offset: int = 0) -> tuple[dict, dict]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "topics": [
                dict(topic, partitions=[{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}])]}
    resp = client.call(FETCH, version, body)
    assert resp["error_code"] == NONE
    t = resp["responses"][0]
    return t, t["partitions"][0]


def _values(part: dict) -> list[tuple[int, bytes]]:
    out = []
    for b in records.parse_batches(bytes(part["records"] or b"")):
        out += [(b.base_offset + i, r.value) for i, r in
                enumerate(records.decode_records(b.records_bytes(), b.record_count))]
    return out


def test_produce_v13_and_fetch_v13_to_v18_by_topic_id(target):
    c = target.raw()
    name = f"byid-{uuid.uuid4().hex[:8]}"
    tid = _create(c, name)
    c = _at_leader(c, name)
    t, p = _produce(c, 13, {"topic_id": tid}, [b"a", b"b"])
    assert bytes(t["topic_id"]) == tid and (p["error_code"], p["base_offset"]) == (NONE, 0)
    for version in range(13, 19):
        t, p = _fetch(c, version, {"topic_id": tid})
        assert bytes(t["topic_id"]) == tid and p["error_code"] == NONE and p["high_watermark"] == 2
        assert _values(p) == [(0, b"a"), (1, b"b")], version
    t, p = _fetch(c, 12, {"topic": name})  # by name up to v12
    assert t["topic"] == name and _values(p) == [(0, b"a"), (1, b"b")]
    c.close()


@pytest.mark.parametrize("version", [10, 11, 12])
def test_produce_v10_to_v12_by_name(target, version):
    c = target.raw()
    name = f"byname-{uuid.uuid4().hex[:8]}"
    _create(c, name)
    c = _at_leader(c, name)
    t, p = _produce(c, version, {"name": name}, [b"x"])
    assert t["name"] == name and (p["error_code"], p["base_offset"]) == (NONE, 0)
    assert p.get("current_leader") in (None, {"leader_id": -1, "leader_epoch": -1})  # only on a leader error
    c.close()


def test_unknown_and_deleted_topic_ids(target):
    c = target.raw()
    stranger = uuid.uuid4().bytes
    t, p = _fetch(c, 13, {"topic_id": stranger})
    assert bytes(t["topic_id"]) == stranger and p["error_code"] == UNKNOWN_TOPIC_ID
    t, p = _produce(c, 13, {"topic_id": stranger}, [b"lost"])
    assert bytes(t["topic_id"]) == stranger and p["error_code"] == UNKNOWN_TOPIC_ID

    name = f"gone-{uuid.uuid4().hex[:8]}"
    old = _create(c, name)
    c = _at_leader(c, name)
    _produce(c, 13, {"topic_id": old}, [b"first life"])
    assert c.call(DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": bytes(16)}],
                                     "timeout_ms": 10000})["responses"][0]["error_code"] == NONE
    new = eventually(lambda: _create(c, name))
    c = _at_leader(c, name)  # the new topic may be led by another shard
    assert new != old
    assert _fetch(c, 18, {"topic_id": old})[1]["error_code"] == UNKNOWN_TOPIC_ID
    assert _produce(c, 13, {"topic_id": old}, [b"stale"])[1]["error_code"] == UNKNOWN_TOPIC_ID
    t, p = _fetch(c, 18, {"topic_id": new})
    assert p["error_code"] == NONE and _values(p) == []  # the new topic has nothing of the old one
    c.close()
