"""Incremental fetch sessions (KIP-227), raw: a full fetch (epoch 0) opens a session, incremental fetches
(its id, the next epoch) name only what changed and get only partitions with news, a wrong epoch is
INVALID_FETCH_SESSION_EPOCH, an unknown or closed session FETCH_SESSION_ID_NOT_FOUND, a session opened by
topic id cannot go on by name (FETCH_SESSION_TOPIC_ID_ERROR), and a topic deleted and re-created under
the same name answers the old session INCONSISTENT_TOPIC_ID and a fetch by its old id UNKNOWN_TOPIC_ID.
Run first against Kafka 4.3.1 (KAFKA_REFERENCE_BOOTSTRAP, see kafka_target), then the gateway."""
from __future__ import annotations

import uuid

from kafka_raw import RawClient
from kafka_target import eventually, target  # noqa: F401 (fixture)
from shard_aware import broker_ids

from cluster.model import place
from codec.kafka import records

PRODUCE, FETCH, METADATA, CREATE_TOPICS, DELETE_TOPICS = 0, 1, 3, 19, 20
NONE, FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH = 0, 70, 71
UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID, FETCH_SESSION_TOPIC_ID_ERROR = 100, 103, 106


def _names(prefix: str, count: int) -> tuple[list[str], int]:
    """`count` new topic names whose one partition one broker will lead, and its node id: a fetch
    session lives on one broker, and under `--shards` a one-partition topic goes where its name
    hashes (cluster.model.place; one process leads everything)."""
    def leader(name: str) -> int:
        return place(name, 1, broker_ids(), 1)[0].leader
    names = [f"{prefix}-{uuid.uuid4().hex[:6]}"]
    while len(names) < count:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        if leader(name) == leader(names[0]):
            names.append(name)
    return names, leader(names[0])


def _raw_at(target, node: int) -> RawClient:
    """A raw client at broker `node` (the bootstrap when it is the only broker, the reference Kafka too)."""
    if len(broker_ids()) == 1:
        return target.raw()
    from confluent_kafka.admin import AdminClient

    broker = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=10).brokers[node]
    return RawClient(f"{broker.host}:{broker.port}", timeout=60)


def _create(client, name: str) -> bytes:
    body = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 10000, "validate_only": False}
    t = eventually(lambda: _created(client, body))
    tid = bytes(t["topic_id"])

    def ready():  # Kafka applies a new topic's metadata, and elects its leader, asynchronously
        _t, p = _fetch(client, 13, [(tid, 0)], session_id=0, epoch=-1)
        assert p["error_code"] == NONE
    eventually(ready)
    return tid


def _created(client, body) -> dict:
    t = client.call(CREATE_TOPICS, 7, body)["topics"][0]
    assert t["error_code"] == NONE, t  # right after a delete Kafka may still answer TOPIC_ALREADY_EXISTS
    return t


def _delete(client, name: str) -> None:
    answer = client.call(DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": bytes(16)}], "timeout_ms": 10000})
    assert answer["responses"][0]["error_code"] == NONE


def _produce(client, tid: bytes, values: list[bytes]) -> None:
    batch = records.build_batch([(1000 + i, None, v, []) for i, v in enumerate(values)], base_timestamp=1000)
    resp = client.call(PRODUCE, 13, {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
        {"topic_id": tid, "partition_data": [{"index": 0, "records": batch}]}]})
    assert resp["responses"][0]["partition_responses"][0]["error_code"] == NONE


def _request(version: int, parts: list, session_id: int, epoch: int, forgotten: list = ()) -> dict:
    """A Fetch naming `parts` [(topic id or name, partition[, fetch offset])]."""
    key = "topic_id" if version >= 13 else "topic"
    topics: dict = {}
    for part in parts:
        topic, index, offset = (*part, 0) if len(part) == 2 else part
        topics.setdefault(topic, []).append({"partition": index, "fetch_offset": offset, "partition_max_bytes": 1 << 20})
    gone: dict = {}
    for topic, index in forgotten:
        gone.setdefault(topic, []).append(index)
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": session_id, "session_epoch": epoch, "rack_id": "",
            "topics": [{key: t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [{key: t, "partitions": ps} for t, ps in gone.items()]}


def _call(client, version: int, parts: list, session_id: int, epoch: int, forgotten: list = ()) -> dict:
    return client.call(FETCH, version, _request(version, parts, session_id, epoch, forgotten))


def _fetch(client, version: int, parts: list, session_id: int, epoch: int) -> tuple[dict, dict]:
    resp = _call(client, version, parts, session_id, epoch)
    assert resp["error_code"] == NONE, resp
    t = resp["responses"][0]
    return t, t["partitions"][0]


def _values(resp: dict) -> list[bytes]:
    out = []
    for t in resp["responses"]:
        for p in t["partitions"]:
            for b in records.parse_batches(bytes(p["records"] or b"")):
                out += [r.value for r in records.decode_records(b.records_bytes(), b.record_count)]
    return out


def _partitions(resp: dict) -> list[tuple]:
    return [(bytes(t["topic_id"]), p["partition_index"], p["error_code"]) for t in resp["responses"]
            for p in t["partitions"]]


def test_incremental_session_answers_what_changed(target):
    (name_a, name_b), node = _names("fs-ab", 2)
    c = _raw_at(target, node)
    a, b = _create(c, name_a), _create(c, name_b)
    full = _call(c, 13, [(a, 0), (b, 0)], session_id=0, epoch=0)
    session = full["session_id"]
    assert full["error_code"] == NONE and session != 0
    assert sorted(_partitions(full)) == sorted([(a, 0, NONE), (b, 0, NONE)])  # a full fetch names everything
    quiet = _call(c, 13, [], session, 1)
    assert (quiet["error_code"], quiet["session_id"], quiet["responses"]) == (NONE, session, [])  # nothing new
    _produce(c, b, [b"x", b"y"])
    news = _call(c, 13, [], session, 2)
    assert _partitions(news) == [(b, 0, NONE)] and _values(news) == [b"x", b"y"]  # only the partition with news
    moved = _call(c, 13, [(b, 0, 2)], session, 3)  # the client moved its position: nothing more to read
    assert moved["responses"] == []
    _produce(c, a, [b"z"])
    assert _values(_call(c, 13, [], session, 4)) == [b"z"]
    gone = _call(c, 13, [], session, 5, forgotten=[(a, 0)])  # a forgotten partition is not fetched any more
    assert gone["session_id"] == session and gone["responses"] == []
    _produce(c, a, [b"w"])
    assert _call(c, 13, [], session, 6)["responses"] == []
    c.close()


def test_session_errors(target):
    (name,), node = _names("fs-err", 1)
    c = _raw_at(target, node)
    a = _create(c, name)
    session = _call(c, 13, [(a, 0)], session_id=0, epoch=0)["session_id"]
    wrong = _call(c, 13, [], session, 5)
    assert (wrong["error_code"], wrong["session_id"], wrong["responses"]) == (INVALID_FETCH_SESSION_EPOCH, 0, [])
    assert _call(c, 13, [], session, 1)["error_code"] == NONE  # a refused epoch does not advance the session
    by_name = _call(c, 12, [], session, 2)
    assert by_name["error_code"] == FETCH_SESSION_TOPIC_ID_ERROR
    unknown = _call(c, 13, [], 0x7ABCDEF, 1)
    assert (unknown["error_code"], unknown["session_id"]) == (FETCH_SESSION_ID_NOT_FOUND, 0)
    closed = _call(c, 13, [(a, 0)], session, -1)  # the final epoch closes the session, answered sessionless
    assert (closed["error_code"], closed["session_id"]) == (NONE, 0)
    assert _call(c, 13, [], session, 2)["error_code"] == FETCH_SESSION_ID_NOT_FOUND
    c.close()


def test_recreated_topic_fails_old_session_and_old_id(target):
    (name,), node = _names("fs-re", 1)
    c = _raw_at(target, node)
    old = _create(c, name)
    session = _call(c, 13, [(old, 0)], session_id=0, epoch=0)["session_id"]
    _delete(c, name)
    new = _create(c, name)
    assert new != old
    stale = _call(c, 13, [], session, 1)
    assert stale["error_code"] == NONE and _partitions(stale) == [(old, 0, INCONSISTENT_TOPIC_ID)]
    assert _fetch(c, 13, [(old, 0)], session_id=0, epoch=-1)[1]["error_code"] == UNKNOWN_TOPIC_ID
    assert _fetch(c, 13, [(new, 0)], session_id=0, epoch=-1)[1]["error_code"] == NONE
    c.close()
