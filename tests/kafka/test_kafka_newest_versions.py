"""The versions issue 33 raised to Kafka 4.3's, each through what changed in Kafka's message JSON, raw.

FindCoordinator v6 (share coordinator keys, KIP-932), DescribeGroups v6 (GROUP_ID_NOT_FOUND with a
message, KIP-1043), DescribeCluster v2 (fenced brokers), DescribeLogDirs v5 (cordoned log dirs),
Metadata v13 (top-level error code), OffsetCommit/OffsetFetch v10 (topics by id), AddOffsetsToTxn v4.
Run first against Kafka 4.3.1 (KAFKA_REFERENCE_BOOTSTRAP, see kafka_target), then the gateway.
"""
from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import subprocess
import uuid

import pytest
from kafka_target import eventually, target  # noqa: F401 (fixture)

from bench.brokers import JARS
from compat.jvm import JVM_FLAGS

FIND_COORDINATOR, DESCRIBE_GROUPS, DESCRIBE_CLUSTER, DESCRIBE_LOG_DIRS = 10, 15, 60, 35
METADATA, OFFSET_COMMIT, OFFSET_FETCH, INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN = 3, 8, 9, 22, 25
NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_ID = 0, 3, 42, 69, 100


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic_id(client, topic: str) -> bytes:
    """Create `topic` (auto-creation) and return its id from Metadata v13."""
    def ask():
        resp = client.call(METADATA, 13, {"topics": [{"name": topic, "topic_id": bytes(16)}],
                                          "allow_auto_topic_creation": True,
                                          "include_topic_authorized_operations": False})
        assert resp["error_code"] == NONE
        t = resp["topics"][0]
        assert t["error_code"] == NONE and bytes(t["topic_id"]) != bytes(16)
        return bytes(t["topic_id"])
    return eventually(ask)


def _coordinators(client, version: int, key_type: int, keys: list[str]) -> list[dict]:
    return client.call(FIND_COORDINATOR, version, {"key_type": key_type, "coordinator_keys": keys})["coordinators"]


def test_metadata_v13_top_level_error_and_same_id_as_v12(target):
    c = target.raw()
    topic = _name("md13")
    tid = _topic_id(c, topic)
    v12 = c.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}], "allow_auto_topic_creation": False})
    assert bytes(v12["topics"][0]["topic_id"]) == tid
    by_id = c.call(METADATA, 13, {"topics": [{"name": None, "topic_id": tid}], "allow_auto_topic_creation": False})
    assert by_id["error_code"] == NONE and by_id["topics"][0]["name"] == topic
    c.close()


def test_find_coordinator_v6_key_types(target):
    c = target.raw()
    groups = eventually(lambda: _ok(_coordinators(c, 6, 0, ["g1", "g2"])))
    assert [g["key"] for g in groups] == ["g1", "g2"] and all(g["node_id"] >= 0 and g["port"] > 0 for g in groups)
    assert [g["error_code"] for g in _coordinators(c, 6, 3, ["x"])] == [INVALID_REQUEST]  # no such key type
    tid = _topic_id(c, _name("share-key"))
    share_key = "g:" + base64.urlsafe_b64encode(tid).decode().rstrip("=") + ":0"
    assert [g["error_code"] for g in _coordinators(c, 5, 2, [share_key])] == [INVALID_REQUEST]  # share: v6+
    assert [g["error_code"] for g in _coordinators(c, 6, 2, ["no-share-key"])] == [INVALID_REQUEST]
    assert [g["error_code"] for g in _coordinators(c, 6, 2, [f"g:{uuid.UUID(bytes=tid)}:0"])] == [INVALID_REQUEST]
    assert _coordinators(c, 6, 2, [share_key])[0]["error_code"] != INVALID_REQUEST  # a well-formed share key
    c.close()


def _ok(coordinators: list[dict]) -> list[dict]:
    assert all(g["error_code"] == NONE for g in coordinators)  # Kafka: not available until its offsets topic is
    return coordinators


def test_describe_groups_v6_says_group_not_found(target):
    c = target.raw()
    group = _name("no-group")
    eventually(lambda: _ok(_coordinators(c, 6, 0, [group])))
    body = {"groups": [group], "include_authorized_operations": False}
    v6 = eventually(lambda: _not_loading(c.call(DESCRIBE_GROUPS, 6, body)["groups"][0]))
    assert (v6["error_code"], v6["error_message"], v6["group_state"]) == \
        (GROUP_ID_NOT_FOUND, f"Group {group} not found.", "Dead")
    v5 = c.call(DESCRIBE_GROUPS, 5, body)["groups"][0]
    assert (v5["error_code"], v5["group_state"]) == (NONE, "Dead")  # before v6: a Dead group, no error
    c.close()


def _not_loading(group: dict) -> dict:
    assert group["error_code"] not in (14, 15, 16)  # coordinator loading / not available / not coordinator
    return group


def test_describe_cluster_v2_marks_no_broker_fenced(target):
    c = target.raw()
    resp = c.call(DESCRIBE_CLUSTER, 2, {"include_cluster_authorized_operations": False, "endpoint_type": 1,
                                        "include_fenced_brokers": True})
    assert resp["error_code"] == NONE and resp["brokers"]
    assert [b["is_fenced"] for b in resp["brokers"]] == [False] * len(resp["brokers"])
    c.close()


def test_describe_log_dirs_v5_is_not_cordoned(target):
    c = target.raw()
    topic = _name("logdir")
    _topic_id(c, topic)
    resp = c.call(DESCRIBE_LOG_DIRS, 5, {"topics": [{"topic": topic, "partitions": [0]}]})
    assert resp["error_code"] == NONE and len(resp["results"]) == 1
    d = resp["results"][0]
    assert d["is_cordoned"] is False and d["total_bytes"] > 0
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in d["topics"]] == [(topic, [0])]
    c.close()


def _commit(c, version: int, group: str, topic_entry: dict, offsets: dict[int, int]) -> list[dict]:
    body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{**topic_entry, "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1, "committed_metadata": "m"}
                for p, o in offsets.items()]}]}
    return c.call(OFFSET_COMMIT, version, body)["topics"]


def _fetch(c, version: int, group: str, wanted) -> list[dict]:
    body = {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": wanted}],
            "require_stable": False}
    g = c.call(OFFSET_FETCH, version, body)["groups"][0]
    assert g["error_code"] == NONE
    return g["topics"]


def _offsets(topic: dict) -> dict[int, tuple[int, int]]:
    return {p["partition_index"]: (p["committed_offset"], p["error_code"]) for p in topic["partitions"]}


def test_offset_commit_and_fetch_v10_name_topics_by_id(target):
    c = target.raw()
    topic, group = _name("oc10"), _name("oc10-group")
    tid = _topic_id(c, topic)
    eventually(lambda: _ok(_coordinators(c, 6, 0, [group])))
    stranger = uuid.uuid4().bytes
    committed = eventually(lambda: _committed(_commit(c, 10, group, {"topic_id": tid}, {0: 5, 7: 1})))
    assert [bytes(t["topic_id"]) for t in committed] == [tid]
    assert {p["partition_index"]: p["error_code"] for p in committed[0]["partitions"]} == \
        {0: NONE, 7: UNKNOWN_TOPIC_OR_PARTITION}
    unknown = _commit(c, 10, group, {"topic_id": stranger}, {0: 3})
    assert [(bytes(t["topic_id"]), [p["error_code"] for p in t["partitions"]]) for t in unknown] == \
        [(stranger, [UNKNOWN_TOPIC_ID])]

    by_name = _fetch(c, 9, group, [{"name": topic, "partition_indexes": [0]}])
    assert by_name[0]["name"] == topic and _offsets(by_name[0]) == {0: (5, NONE)}  # the same offset, by name
    by_id = _fetch(c, 10, group, [{"topic_id": tid, "partition_indexes": [0, 1]},
                                  {"topic_id": stranger, "partition_indexes": [0]}])
    assert [bytes(t["topic_id"]) for t in by_id] == [tid, stranger]
    assert _offsets(by_id[0]) == {0: (5, NONE), 1: (-1, NONE)}
    assert _offsets(by_id[1]) == {0: (-1, UNKNOWN_TOPIC_ID)}
    every = _fetch(c, 10, group, None)
    assert [(bytes(t["topic_id"]), _offsets(t)) for t in every] == [(tid, {0: (5, NONE)})]
    c.close()


def _committed(topics: list[dict]) -> list[dict]:
    assert all(p["error_code"] not in (14, 15, 16) for t in topics for p in t["partitions"])
    return topics


def test_add_offsets_to_txn_v4(target):
    c = target.raw()
    txn, group = _name("txn"), _name("txn-group")
    eventually(lambda: _ok(_coordinators(c, 6, 1, [txn])))
    pid = eventually(lambda: _initialized(c.call(INIT_PRODUCER_ID, 5, {
        "transactional_id": txn, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1})))
    resp = c.call(ADD_OFFSETS_TO_TXN, 4, {"transactional_id": txn, "producer_id": pid["producer_id"],
                                          "producer_epoch": pid["producer_epoch"], "group_id": group})
    assert resp["error_code"] == NONE
    c.close()


def _initialized(resp: dict) -> dict:
    assert resp["error_code"] == NONE
    return resp


def test_kafka_43_log_dirs_tool(target):
    """Kafka 4.3.1's own kafka-log-dirs (its admin client asks DescribeLogDirs v5) lists the topic."""
    jars = os.path.join(JARS, "kafka")
    if not glob.glob(os.path.join(jars, "kafka-tools-*.jar")):
        pytest.skip("needs bench/jars/kafka (make bench-jars)")
    c = target.raw()
    topic = _name("logdir-tool")
    _topic_id(c, topic)
    c.close()
    out = subprocess.run([shutil.which("java") or "java", *JVM_FLAGS, "-cp", os.path.join(jars, "*"),
                          "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", target.bootstrap,
                          "--describe", "--topic-list", topic], capture_output=True, text=True, timeout=120)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    dirs = [d for b in doc["brokers"] for d in b["logDirs"]]
    listed = [(p["partition"], p["isFuture"]) for d in dirs for p in d["partitions"]]
    assert (f"{topic}-0", False) in listed and all(name.rsplit("-", 1)[0] == topic for name, _ in listed)
    assert all(d["error"] is None for d in dirs)
