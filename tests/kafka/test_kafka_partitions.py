"""The partition placement APIs as a single-node Kafka 4.x answers them: DescribeTopicPartitions with its
cursor (kafka-python, kafka-topics --describe), ElectLeaders (ELECTION_NOT_NEEDED; kafka-leader-election),
AlterPartitionReassignments / ListPartitionReassignments (a no-op plan completes through
kafka-reassign-partitions --execute/--verify/--list), DescribeQuorum (kafka-metadata-quorum). Checked
against a real Kafka 4.x first (KAFKA_REFERENCE_BOOTSTRAP)."""
from __future__ import annotations

import json
import os
import types
import uuid

import pytest
import trio
from kafka.admin import NewTopic
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError
from kafka.structs import TopicPartition
from kafka_target import admin, eventually, gateway_only, target  # noqa: F401 (fixtures)
from shard_aware import partition_leaders

import gateway.kafka.access as access
import gateway.kafka.authz as authz
from codec.kafka import apis
from compat.jvm import run_tool
from gateway.cluster.ownership import SINGLE_NODE
from gateway.kafka.handlers import HANDLERS
from gateway.kafka.registry import RequestContext
from security import Security
from security.acl import AclBinding, Operation as Op, PatternType, Permission, ResourceType as Res

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION = 84, 3


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return str(tmp_path_factory.mktemp("partition-tools"))


@pytest.fixture(scope="module")
def node(admin) -> int:
    """The broker's id (1 for the reference Kafka, 0 for the gateway)."""
    return admin.describe_cluster()["brokers"][0]["broker_id"]


def _topic(admin, partitions: int, name: str | None = None) -> str:
    name = name or f"pl-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(name, partitions, 1)])
    eventually(lambda: _described(admin, [name])["topics"][0]["partitions"] or 1 / 0)
    return name


def _described(admin, names, limit=2000, cursor=None) -> dict:
    return admin.describe_topic_partitions(names, response_partition_limit=limit, cursor=cursor)


def _tool(target, logs: str, main: str, *args: str) -> str:
    r = run_tool("kafkatools", main, ["--bootstrap-server", target.bootstrap, *args], logs)
    assert r.returncode == 0, f"{main} {args} -> {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_describe_topic_partitions_pages_with_a_cursor(admin, node):
    topic = _topic(admin, 3)
    first = _described(admin, [topic, "absent-" + topic], limit=2)
    by_name = {t["name"]: t for t in first["topics"]}
    assert by_name["absent-" + topic]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
    assert by_name["absent-" + topic]["partitions"] == []
    described = by_name[topic]
    assert described["error_code"] == 0 and described["is_internal"] is False
    assert [p["partition_index"] for p in described["partitions"]] == [0, 1]
    p0 = described["partitions"][0]
    assert (p0["leader_id"], p0["leader_epoch"], p0["replica_nodes"], p0["isr_nodes"]) == (node, 0, [node], [node])
    assert first["next_cursor"] == {"topic_name": topic, "partition_index": 2}
    rest = _described(admin, [topic], limit=2, cursor=first["next_cursor"])
    assert [p["partition_index"] for t in rest["topics"] for p in t["partitions"]] == [2]
    assert rest["next_cursor"] is None


def test_describe_topic_partitions_cursor_moves_to_the_next_topic(admin):
    a = _topic(admin, 2)
    b = _topic(admin, 1, a + "-b")  # sorts after a
    page = _described(admin, [b, a], limit=2)
    assert [(t["name"], len(t["partitions"])) for t in page["topics"]] == [(a, 2)]
    assert page["next_cursor"] == {"topic_name": b, "partition_index": 0}
    page = _described(admin, [a, b], limit=2, cursor=page["next_cursor"])
    assert [(t["name"], len(t["partitions"])) for t in page["topics"]] == [(b, 1)]
    assert page["next_cursor"] is None


def test_kafka_topics_describe(target, admin, logs, node):
    """kafka-topics --describe (Kafka 4.x's TopicCommand asks DescribeTopicPartitions)."""
    topic = _topic(admin, 2)
    out = _tool(target, logs, TOPIC_COMMAND, "--describe", "--topic", topic)
    assert f"Topic: {topic}\tTopicId:" in out and "PartitionCount: 2\tReplicationFactor: 1" in out
    leaders = partition_leaders(target.bootstrap, topic)  # `node` for every one on one broker
    for p in (0, 1):
        assert f"Partition: {p}\tLeader: {leaders[p]}\tReplicas: {leaders[p]}\tIsr: {leaders[p]}" in out


def test_elect_leaders_is_not_needed(admin):
    topic = _topic(admin, 2)
    for election in (0, 1):  # preferred, unclean
        r = admin.elect_leaders(election, {topic: [0, 1, 7], "absent-" + topic: [0]}, raise_errors=False)
        got = {(t.topic, p.partition_id): p.error_code for t in r.replica_election_results for p in t.partition_result}
        assert got == {(topic, 0): ELECTION_NOT_NEEDED, (topic, 1): ELECTION_NOT_NEEDED,
                       (topic, 7): UNKNOWN_TOPIC_OR_PARTITION, ("absent-" + topic, 0): UNKNOWN_TOPIC_OR_PARTITION}
        assert r.error_code == 0


def test_kafka_leader_election_tool(target, admin, logs):
    topic = _topic(admin, 1)
    out = _tool(target, logs, LEADER_ELECTION, "--election-type", "preferred", "--topic", topic, "--partition", "0")
    assert f"Valid replica already elected for partitions {topic}-0" in out
    _tool(target, logs, LEADER_ELECTION, "--election-type", "preferred", "--all-topic-partitions")


def test_reassignments_on_one_broker(admin, node):
    topic = _topic(admin, 4)
    got = admin.alter_partition_reassignments({
        TopicPartition(topic, 0): [node],  # the current replica set: done at once
        TopicPartition(topic, 1): [node + 5],  # a broker that does not exist
        TopicPartition(topic, 2): None,  # cancel: nothing is in progress
        TopicPartition(topic, 3): [node, node],
    })
    assert got == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): InvalidReplicationAssignmentError,
                   TopicPartition(topic, 2): NoReassignmentInProgressError,
                   TopicPartition(topic, 3): InvalidReplicationAssignmentError}
    assert admin.list_partition_reassignments() == {}
    assert admin.list_partition_reassignments([TopicPartition(topic, 0)]) == {}


def test_kafka_reassign_partitions_no_op_plan(target, admin, logs, node, tmp_path):
    topic = _topic(admin, 2)
    plan = os.path.join(tmp_path, "plan.json")
    with open(plan, "w") as f:
        leaders = partition_leaders(target.bootstrap, topic)  # each its own replica set: a no-op
        json.dump({"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": [leaders[p]]}
                                                for p in range(2)]}, f)
    out = _tool(target, logs, REASSIGN, "--reassignment-json-file", plan, "--execute")
    assert f"Successfully started partition reassignments for {topic}-0,{topic}-1" in out
    out = _tool(target, logs, REASSIGN, "--reassignment-json-file", plan, "--verify")
    assert f"Reassignment of partition {topic}-0 is completed." in out
    assert f"Reassignment of partition {topic}-1 is completed." in out
    assert "No partition reassignments found." in _tool(target, logs, REASSIGN, "--list")


def test_describe_metadata_quorum(target, admin, logs, node):
    quorum = admin.describe_metadata_quorum()
    (part,) = [p for t in quorum["topics"] if t["topic_name"] == "__cluster_metadata" for p in t["partitions"]]
    assert (part["error"], part["leader_id"]) == (None, node) and part["high_watermark"] > 0  # topics were made
    assert [v["replica_id"] for v in part["current_voters"]] == [node] and part["observers"] == []
    assert [n["node_id"] for n in quorum["nodes"]] == [node]
    out = _tool(target, logs, QUORUM, "describe", "--status")
    assert f"LeaderId:               {node}\n" in out and "MaxFollowerLag:         0\n" in out
    assert f'CurrentVoters:          [{{"id": {node}, "endpoints": ["CONTROLLER://' in out


def test_describe_quorum_of_another_partition(target):
    c = target.raw()
    body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}]}
    part = c.call(55, 2, body)["topics"][0]["partitions"][0]
    c.close()
    assert (part["error_code"], part["current_voters"]) == (UNKNOWN_TOPIC_OR_PARTITION, [])


# ------------------------------------------------------------ Kafka's ACL rules (in process, gateway only)
def _acl_ctx(tmp_path, principal: str, request: dict, version: int = 0):
    sec = Security(str(tmp_path), super_users=["User:admin"], environ={})
    sec.authorizer.create([AclBinding(Res.TOPIC, "seen", PatternType.LITERAL, "User:alice", "*", Op.DESCRIBE,
                                      Permission.ALLOW)])
    topic = types.SimpleNamespace(read_queues=1, write_queues=1, topic_id=bytes(range(16)))
    store = types.SimpleNamespace(topics=types.SimpleNamespace(
        names=lambda: ["hidden", "seen"], get=lambda n: topic if n in ("hidden", "seen") else None,
        data_version={"counter": 3, "timestamp": 0}))
    app = types.SimpleNamespace(security=sec, ownership=SINGLE_NODE, store=store,
                                config=types.SimpleNamespace(advertised="127.0.0.1"))
    return RequestContext(app, version, request, "c", "10.0.0.1", 9092, principal)


def _guarded(ctx, api):
    return trio.run(access.guarded, api.key, HANDLERS[api.key], ctx)


@gateway_only
def test_elections_and_reassignments_need_the_cluster(tmp_path):
    elect = {"election_type": 0, "topic_partitions": [{"topic": "seen", "partitions": [0]}]}
    alter = {"topics": [{"name": "seen", "partitions": [{"partition_index": 0, "replicas": [0]}]}]}
    denied = authz.CLUSTER_AUTHORIZATION_FAILED
    body = _guarded(_acl_ctx(tmp_path, "User:alice", elect, 2), apis.ELECT_LEADERS)
    assert body["error_code"] == denied
    assert body["replica_election_results"][0]["partition_result"][0]["error_code"] == denied
    body = _guarded(_acl_ctx(tmp_path, "User:admin", elect, 2), apis.ELECT_LEADERS)
    assert body["replica_election_results"][0]["partition_result"][0]["error_code"] == ELECTION_NOT_NEEDED
    body = _guarded(_acl_ctx(tmp_path, "User:alice", alter, 1), apis.ALTER_PARTITION_REASSIGNMENTS)
    assert body["error_code"] == denied and body["responses"][0]["partitions"][0]["error_code"] == denied
    body = _guarded(_acl_ctx(tmp_path, "User:admin", alter, 1), apis.ALTER_PARTITION_REASSIGNMENTS)
    assert body["error_code"] == 0 and body["responses"][0]["partitions"][0]["error_code"] == 0
    for principal, code in (("User:alice", denied), ("User:admin", 0)):
        body = _guarded(_acl_ctx(tmp_path, principal, {"topics": None}), apis.LIST_PARTITION_REASSIGNMENTS)
        assert body["error_code"] == code
        quorum = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        assert _guarded(_acl_ctx(tmp_path, principal, quorum, 2), apis.DESCRIBE_QUORUM)["error_code"] == code


@gateway_only
def test_describe_topic_partitions_needs_describe_on_the_topic(tmp_path):
    def asked(names: list[str]) -> dict:
        request = {"topics": [{"name": n} for n in names], "response_partition_limit": 10, "cursor": None}
        body = _guarded(_acl_ctx(tmp_path, "User:alice", request), apis.DESCRIBE_TOPIC_PARTITIONS)
        return {t["name"]: t["error_code"] for t in body["topics"]}
    assert asked(["hidden", "seen"]) == {"hidden": authz.TOPIC_AUTHORIZATION_FAILED, "seen": 0}
    assert asked([]) == {"seen": 0}  # a listing leaves out what the principal may not describe
