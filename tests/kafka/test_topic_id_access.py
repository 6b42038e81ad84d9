"""Produce v13 / Fetch v13+ name topics by id: with ACLs on, the ids are turned into names before
authorization (in process, gateway only: the ACL rules themselves are checked against Kafka in
tests/security). A topic the principal may not read is TOPIC_AUTHORIZATION_FAILED under its id; an
id no topic has reaches the handler (which answers UNKNOWN_TOPIC_ID, as Kafka does). Also the
authorization of the other APIs issue 33 added: OffsetForLeaderEpoch (DESCRIBE on each topic),
UpdateFeatures and AlterReplicaLogDirs (ALTER on the cluster)."""
from __future__ import annotations

import types

import trio

import gateway.kafka.access as access
import gateway.kafka.topics as topics
from gateway.cluster.ownership import SINGLE_NODE
from gateway.kafka.registry import RequestContext
from security import Security
from security.acl import AclBinding, Operation as Op, PatternType, Permission, ResourceType as Res

SEEN, HIDDEN, STRANGER = b"\x01" * 16, b"\x02" * 16, b"\x03" * 16
TOPIC_AUTHORIZATION_FAILED = 29


def _ctx(tmp_path, key: int, request: dict, version: int = 13):
    sec = Security(str(tmp_path), super_users=["User:admin"], environ={})
    sec.authorizer.create([AclBinding(Res.TOPIC, "seen", PatternType.LITERAL, "User:alice", "*", op,
                                      Permission.ALLOW) for op in (Op.READ, Op.WRITE)])
    ids = {SEEN: "seen", HIDDEN: "hidden"}
    store = types.SimpleNamespace(topics=types.SimpleNamespace(name_of_id=ids.get))
    app = types.SimpleNamespace(security=sec, ownership=SINGLE_NODE, store=store)
    topics.name_topics_by_id(app, key, version, request)
    return RequestContext(app, version, request, "c", "10.0.0.1", 9092, "User:alice")


def test_fetch_by_id_is_authorized_by_name(tmp_path):
    parts = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100}]
    request = {"topics": [{"topic_id": tid, "partitions": parts} for tid in (SEEN, HIDDEN, STRANGER)]}
    handled = []

    async def handler(ctx):
        handled.extend((t["topic"], t["topic_id"]) for t in ctx.request["topics"])
        return {"responses": [], "session_id": 0}
    body = trio.run(access.guarded, 1, handler, _ctx(tmp_path, 1, request))
    assert handled == [("seen", SEEN), (None, STRANGER)]
    assert [(t["topic_id"], [p["error_code"] for p in t["partitions"]]) for t in body["responses"]] == \
        [(HIDDEN, [TOPIC_AUTHORIZATION_FAILED])]


def test_produce_by_id_is_authorized_by_name(tmp_path):
    data = [{"index": 0, "records": b""}]
    request = {"acks": -1, "transactional_id": None,
               "topic_data": [{"topic_id": tid, "partition_data": data} for tid in (SEEN, HIDDEN, STRANGER)]}
    handled = []

    async def handler(ctx):
        handled.extend((t["name"], t["topic_id"]) for t in ctx.request["topic_data"])
        return {"responses": []}
    body = trio.run(access.guarded, 0, handler, _ctx(tmp_path, 0, request))
    assert handled == [("seen", SEEN), (None, STRANGER)]
    assert [(t["topic_id"], [p["error_code"] for p in t["partition_responses"]]) for t in body["responses"]] == \
        [(HIDDEN, [TOPIC_AUTHORIZATION_FAILED])]


def test_older_versions_keep_their_names(tmp_path):
    request = {"topics": [{"topic": "seen", "topic_id": STRANGER, "partitions": []}]}
    _ctx(tmp_path, 1, request, version=12)
    assert request["topics"][0]["topic"] == "seen"


# ------------------------------------------------------------ the APIs issue 33 added, under ACLs
CLUSTER_AUTHORIZATION_FAILED = 31


def _alice(tmp_path, request: dict, version: int):
    return _ctx(tmp_path, -1, request, version)


def test_update_features_and_log_dir_moves_need_alter_on_the_cluster(tmp_path):
    from gateway.kafka.handlers import HANDLERS
    update = {"timeout_ms": 1000, "validate_only": True, "feature_updates": [
        {"feature": "group.version", "max_version_level": 1, "upgrade_type": 1}]}
    body = trio.run(access.guarded, 57, HANDLERS[57], _alice(tmp_path, update, 1))
    assert (body["error_code"], body["results"]) == (CLUSTER_AUTHORIZATION_FAILED, [])
    move = {"dirs": [{"path": "/x", "topics": [{"name": "seen", "partitions": [0, 1]}]}]}
    body = trio.run(access.guarded, 34, HANDLERS[34], _alice(tmp_path, move, 2))
    assert [p["error_code"] for t in body["results"] for p in t["partitions"]] == [CLUSTER_AUTHORIZATION_FAILED] * 2


def test_offset_for_leader_epoch_needs_describe_on_the_topic(tmp_path):
    request = {"replica_id": -1, "topics": [{"topic": name, "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]} for name in ("seen", "hidden")]}
    handled = []

    async def handler(ctx):
        handled.extend(t["topic"] for t in ctx.request["topics"])
        return {"topics": []}
    ctx = _alice(tmp_path, request, 4)
    ctx.app.security.authorizer.create([AclBinding(Res.TOPIC, "seen", PatternType.LITERAL, "User:alice", "*",
                                                   Op.DESCRIBE, Permission.ALLOW)])
    body = trio.run(access.guarded, 23, handler, ctx)
    assert handled == ["seen"]
    assert [(t["topic"], [p["error_code"] for p in t["partitions"]]) for t in body["topics"]] == \
        [("hidden", [TOPIC_AUTHORIZATION_FAILED])]
