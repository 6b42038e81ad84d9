"""Classic-group conformance with Kafka 4.x: commits fenced by generation, members expired by their
session timeout, OffsetCommit/OffsetDelete of unknown partitions, committed leader epochs, ListGroups
v5, static-member restarts (KIP-814), the transaction timeout bound, DeleteRecords.
Checked against a real Kafka 4.x first (kafka_target.py)."""
from __future__ import annotations

import struct
import threading
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka_target import eventually, gateway_only, target  # noqa: F401 (fixture)

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 8, 9, 10, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, INIT_PRODUCER_ID, OFFSET_DELETE = 15, 16, 42, 22, 47
UNKNOWN_TOPIC, ILLEGAL_GENERATION, UNKNOWN_MEMBER, REBALANCE_IN_PROGRESS = 3, 22, 25, 27
NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED, INVALID_TXN_TIMEOUT, SUBSCRIBED = 68, 69, 79, 50, 86
SESSION_MS = 6000  # Kafka's group.min.session.timeout.ms


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _topic(target, partitions: int = 2) -> str:
    name = _name("ft")
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(15)
    return name


def _subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


class Member:
    """A classic consumer-group member spoken over the raw protocol (one connection each)."""

    def __init__(self, target, group: str, topics: list[str], instance_id: str | None = None,
                 session_ms: int = SESSION_MS, rebalance_ms: int = 60_000) -> None:
        self.client = target.raw_coordinator(group)  # as a client joins (--shards: the shard it hashes to)
        self.group, self.topics, self.instance_id = group, topics, instance_id
        self.session_ms, self.rebalance_ms = session_ms, rebalance_ms
        self.member_id, self.generation = "", -1
        eventually(lambda: self._coordinator_ready())

    def _coordinator_ready(self) -> None:
        r = self.client.call(FIND_COORDINATOR, 3, {"key": self.group, "key_type": 0})
        assert r["error_code"] == 0, r

    def join(self) -> dict:
        body = {"group_id": self.group, "session_timeout_ms": self.session_ms,
                "rebalance_timeout_ms": self.rebalance_ms, "member_id": self.member_id,
                "group_instance_id": self.instance_id, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": _subscription(self.topics)}], "reason": None}
        r = self.client.call(JOIN, 9, body)
        if r["error_code"] == MEMBER_ID_REQUIRED:
            body["member_id"] = r["member_id"]
            r = self.client.call(JOIN, 9, body)
        if r["error_code"] == 0:
            self.member_id, self.generation = r["member_id"], r["generation_id"]
        return r

    def sync(self, assignments: dict[str, bytes] | None = None) -> dict:
        return self.client.call(SYNC, 5, {
            "group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": self.instance_id, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()]})

    def heartbeat(self) -> int:
        return self.client.call(HEARTBEAT, 4, {"group_id": self.group, "generation_id": self.generation,
                                               "member_id": self.member_id,
                                               "group_instance_id": self.instance_id})["error_code"]

    def leave(self) -> int:
        return self.client.call(LEAVE, 5, {"group_id": self.group, "members": [
            {"member_id": self.member_id, "group_instance_id": self.instance_id, "reason": None}]})["error_code"]

    def commit(self, topic: str, offset: int, partition: int = 0, generation: int | None = None,
               member_id: str | None = None) -> int:
        return commit(self.client, self.group, topic, offset, partition,
                      self.generation if generation is None else generation,
                      self.member_id if member_id is None else member_id)


def commit(client, group: str, topic: str, offset: int, partition: int = 0, generation: int = -1,
           member_id: str = "", leader_epoch: int = -1) -> int:
    r = client.call(OFFSET_COMMIT, 9, {"group_id": group, "generation_id_or_member_epoch": generation,
                                       "member_id": member_id, "group_instance_id": None, "topics": [
                                           {"name": topic, "partitions": [{
                                               "partition_index": partition, "committed_offset": offset,
                                               "committed_leader_epoch": leader_epoch,
                                               "committed_metadata": ""}]}]})
    return r["topics"][0]["partitions"][0]["error_code"]


def committed(client, group: str, topic: str, partition: int = 0) -> dict:
    r = client.call(OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": [
        {"name": topic, "partition_indexes": [partition]}]}], "require_stable": False})
    return r["groups"][0]["topics"][0]["partitions"][0]


def _solo(target, group: str, topic: str, **kw) -> Member:
    """A member that joined and synced alone (generation 1, the leader)."""
    m = Member(target, group, [topic], **kw)
    assert m.join()["error_code"] == 0
    assert m.sync({m.member_id: b""})["error_code"] == 0
    return m


def test_commit_to_unknown_topic_or_partition(target):
    topic = _topic(target)
    client, group = target.raw(), _name("g")
    eventually(lambda: Member(target, group, [topic]))
    assert commit(client, group, topic, 1, partition=5) == UNKNOWN_TOPIC
    assert commit(client, group, _name("missing"), 1) == UNKNOWN_TOPIC
    assert commit(client, group, topic, 1, partition=1) == 0


def test_commits_are_fenced_by_generation(target):
    topic = _topic(target)
    group = _name("g")
    m = Member(target, group, [topic])
    assert commit(m.client, group, topic, 1, generation=5, member_id="x") == GROUP_ID_NOT_FOUND
    assert m.join()["error_code"] == 0
    assert m.commit(topic, 1) == REBALANCE_IN_PROGRESS  # joined, not yet synced
    assert m.sync({m.member_id: b""})["error_code"] == 0
    assert m.commit(topic, 10) == 0
    assert commit(m.client, group, topic, 99) == UNKNOWN_MEMBER  # a simple commit to a live group
    assert m.commit(topic, 99, member_id="zombie") == UNKNOWN_MEMBER
    assert m.commit(topic, 99, generation=m.generation + 1) == ILLEGAL_GENERATION
    assert m.commit(topic, 99, generation=-1) == ILLEGAL_GENERATION
    assert m.leave() == 0
    assert m.commit(topic, 99) == UNKNOWN_MEMBER  # a revoked member of an empty group
    assert committed(m.client, group, topic)["committed_offset"] == 10
    assert commit(m.client, group, topic, 20) == 0  # an empty group takes simple commits
    assert committed(m.client, group, topic)["committed_offset"] == 20


def test_silent_member_expires_by_its_session_timeout(target):
    """A member that stops heartbeating is dropped after session.timeout.ms with no other request:
    a zombie commit is refused, the group is Empty and can be deleted."""
    topic = _topic(target)
    group = _name("g")
    m = _solo(target, group, topic)
    assert m.commit(topic, 5) == 0
    other = target.raw()

    def empty():
        d = other.call(DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
        assert d["groups"][0]["group_state"] == "Empty", d
    eventually(empty, timeout=SESSION_MS / 1000 * 4)
    assert m.commit(topic, 99) == UNKNOWN_MEMBER
    assert committed(other, group, topic)["committed_offset"] == 5
    r = other.call(DELETE_GROUPS, 2, {"groups_names": [group]})
    assert r["results"][0]["error_code"] == 0


def test_waiting_join_completes_when_the_silent_member_expires(target):
    """B's JoinGroup waits for A to rejoin; A is gone (no LeaveGroup), so the rebalance completes
    when A's session expires, long before the 120 s rebalance timeout (the socket gives up at 60 s)."""
    topic = _topic(target)
    group = _name("g")
    a = _solo(target, group, topic, rebalance_ms=120_000)
    b = Member(target, group, [topic], rebalance_ms=120_000)
    r = b.join()
    assert r["error_code"] == 0 and r["generation_id"] == a.generation + 1
    assert [x["member_id"] for x in r["members"]] == [b.member_id] and r["leader"] == b.member_id
    assert a.heartbeat() == UNKNOWN_MEMBER


def test_delete_groups_refuses_a_live_group(target):
    topic = _topic(target)
    group = _name("g")
    m = _solo(target, group, topic)
    r = m.client.call(DELETE_GROUPS, 2, {"groups_names": [group]})
    assert r["results"][0]["error_code"] == NON_EMPTY_GROUP
    assert m.leave() == 0
    r = m.client.call(DELETE_GROUPS, 2, {"groups_names": [group]})
    assert r["results"][0]["error_code"] == 0


def test_committed_leader_epoch_is_returned(target):
    topic = _topic(target)
    client, group = target.raw(), _name("g")
    eventually(lambda: Member(target, group, [topic]))
    assert commit(client, group, topic, 3, leader_epoch=7) == 0
    assert commit(client, group, topic, 4, partition=1) == 0
    assert committed(client, group, topic)["committed_leader_epoch"] == 7
    assert committed(client, group, topic, 1)["committed_leader_epoch"] == -1


def test_list_groups_v5_type_and_state_filters(target):
    topic = _topic(target)
    group = _name("g")
    m = _solo(target, group, topic)

    def listed(states, types):  # at the member's coordinator: a broker lists the groups it coordinates
        r = m.client.call(LIST_GROUPS, 5, {"states_filter": states, "types_filter": types})
        return {g["group_id"]: g for g in r["groups"]}
    mine = listed([], [])[group]
    assert (mine["group_type"], mine["group_state"], mine["protocol_type"]) == ("classic", "Stable", "consumer")
    assert group in listed(["stable"], ["Classic"])
    assert group not in listed([], ["consumer"])
    assert group not in listed(["Empty"], [])


def test_init_producer_id_refuses_timeouts_above_the_broker_maximum(target):
    client = target.raw()
    for timeout_ms in (900_001, 0, -5):
        r = client.call(INIT_PRODUCER_ID, 5, {"transactional_id": _name("tx"), "transaction_timeout_ms": timeout_ms,
                                              "producer_id": -1, "producer_epoch": -1})
        assert r["error_code"] == INVALID_TXN_TIMEOUT, (timeout_ms, r)


def test_static_member_restart_does_not_rebalance(target):
    """KIP-345/814: a static member that rejoins with its instance id keeps the generation and its
    assignment; a restarted leader gets the members with skip_assignment."""
    topic = _topic(target)
    group = _name("g")
    a = Member(target, group, [topic], instance_id="a")
    assert a.join()["error_code"] == 0
    assert a.sync({a.member_id: b""})["error_code"] == 0
    b = Member(target, group, [topic], instance_id="b")
    b_joined = {}
    waiting = threading.Thread(target=lambda: b_joined.update(b.join()))
    waiting.start()
    eventually(lambda: _assert(a.heartbeat() == REBALANCE_IN_PROGRESS))
    a_joined = a.join()
    waiting.join(60)
    assert a_joined["error_code"] == 0 and b_joined["error_code"] == 0 and a_joined["leader"] == a.member_id
    given = {a.member_id: b"assignment-a", b.member_id: b"assignment-b"}
    assert a.sync(given)["assignment"] == b"assignment-a"
    assert b.sync()["assignment"] == b"assignment-b"
    generation = a.generation

    new_b = Member(target, group, [topic], instance_id="b")  # a follower restarts
    r = new_b.join()
    assert (r["error_code"], r["generation_id"], r["skip_assignment"], r["members"]) == (0, generation, False, [])
    assert new_b.sync()["assignment"] == b"assignment-b"
    assert b.heartbeat() != 0 and a.heartbeat() == 0  # the old incarnation is fenced; no rebalance

    new_a = Member(target, group, [topic], instance_id="a")  # the leader restarts
    r = new_a.join()
    assert (r["error_code"], r["generation_id"], r["skip_assignment"]) == (0, generation, True)
    assert {m["group_instance_id"] for m in r["members"]} == {"a", "b"}
    assert new_a.sync({})["assignment"] == b"assignment-a"
    assert a.heartbeat() != 0 and new_b.heartbeat() == 0 and new_a.heartbeat() == 0


def _assert(ok: bool) -> None:
    assert ok


def test_offset_delete(target):
    topic = _topic(target)
    group = _name("g")
    m = _solo(target, group, topic)
    assert m.commit(topic, 5) == 0 and m.commit(topic, 6, partition=1) == 0

    def delete(name: str, partitions: list[int], group_id: str = group) -> dict:
        r = m.client.call(OFFSET_DELETE, 0, {"group_id": group_id, "topics": [
            {"name": name, "partitions": [{"partition_index": p} for p in partitions]}]})
        return r
    assert delete(topic, [0], _name("nogroup"))["error_code"] == GROUP_ID_NOT_FOUND
    r = delete(topic, [0])
    assert r["error_code"] == 0 and r["topics"][0]["partitions"][0]["error_code"] == SUBSCRIBED
    assert m.leave() == 0
    r = delete(topic, [0, 9])
    codes = {p["partition_index"]: p["error_code"] for p in r["topics"][0]["partitions"]}
    assert codes == {0: 0, 9: UNKNOWN_TOPIC}
    assert committed(m.client, group, topic)["committed_offset"] == -1
    assert committed(m.client, group, topic, 1)["committed_offset"] == 6


def _produce(target, topic: str, count: int) -> None:
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    for i in range(count):
        p.produce(topic, value=b"v%d" % i, partition=0)
        p.flush(15)  # one batch per record: DeleteRecords then cuts between batches


def _read_all(target, topic: str, expect: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": _name("r"), "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0)])
    out = []
    for _ in range(300):
        msg = c.poll(0.1)
        if msg is not None and msg.error() is None:
            out.append(msg.value())
        if len(out) >= expect:
            break
    c.close()
    return out


def test_delete_records_moves_the_log_start_offset(target):
    topic = _topic(target, partitions=1)
    _produce(target, topic, 10)
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    tp = TopicPartition(topic, 0, 4)
    (result,) = admin.delete_records([tp]).values()
    assert result.result(15).low_watermark == 4
    earliest = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    assert list(earliest.values())[0].result(15).offset == 4
    assert _read_all(target, topic, 6) == [b"v%d" % i for i in range(4, 10)]
    with pytest.raises(Exception) as exc:
        list(admin.delete_records([TopicPartition(topic, 0, 11)]).values())[0].result(15)
    assert "OFFSET_OUT_OF_RANGE" in str(exc.value)
    (result,) = admin.delete_records([TopicPartition(topic, 0, -1)]).values()  # -1: the high watermark
    assert result.result(15).low_watermark == 10


@gateway_only
def test_log_start_offset_survives_a_restart(target):
    topic = _topic(target, partitions=1)
    _produce(target, topic, 5)
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    assert list(admin.delete_records([TopicPartition(topic, 0, 3)]).values())[0].result(15).low_watermark == 3
    target.gateway.restart()
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    earliest = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    assert list(earliest.values())[0].result(15).offset == 3
