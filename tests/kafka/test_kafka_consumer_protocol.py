"""KIP-848 consumer groups (group.protocol=consumer) with librdkafka: server-side assignment,
rebalance on join and leave, commits by member epoch, ConsumerGroupDescribe, ListGroups types.
Checked against a real Kafka 4.x first (kafka_target.py)."""
from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_target import eventually, gateway_only, target  # noqa: F401 (fixture)

from compat.jvm import run_tool
from compat.tools import table

HEARTBEAT, DESCRIBE, LIST_GROUPS, OFFSET_COMMIT = 68, 69, 16, 8
UNKNOWN_MEMBER, FENCED_EPOCH, STALE_EPOCH, GROUP_ID_NOT_FOUND = 25, 110, 113, 69


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _topic(target, partitions: int, per_partition: int) -> str:
    name = _name("kip848")
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(15)
    p = Producer({"bootstrap.servers": target.bootstrap})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(name, value=b"%d-%d" % (part, i), partition=part)
    assert p.flush(30) == 0
    return name


def _consumer(target, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})


def _poll(consumers, seen: dict, until, timeout: float = 90.0) -> None:
    """Poll every consumer until `until()`; records (consumer index, partition, value); never two
    owners of one partition at once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                seen.setdefault(m.value(), []).append((i, m.partition()))
        owned = [(tp.topic, tp.partition) for c in consumers for tp in c.assignment()]
        assert len(owned) == len(set(owned)), f"a partition has two owners: {owned}"
        if until():
            return
    raise AssertionError("timed out")


def test_two_members_split_then_one_takes_over(target):
    topic = _topic(target, 4, 5)
    group = _name("g848")
    a = _consumer(target, group)
    a.subscribe([topic])
    seen: dict = {}
    _poll([a], seen, lambda: len(a.assignment()) == 4)
    b = _consumer(target, group)
    b.subscribe([topic])
    _poll([a, b], seen, lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
    assert sorted(tp.partition for tp in a.assignment() + b.assignment()) == [0, 1, 2, 3]
    _poll([a, b], seen, lambda: len(seen) == 20 and all(
        tp.offset == 5 for c in (a, b) for tp in c.position(c.assignment())))
    assert sorted(seen) == sorted(b"%d-%d" % (p, i) for p in range(4) for i in range(5))
    for c in (a, b):
        c.commit(asynchronous=False)  # every owned partition at its end

    client = target.raw_coordinator(group)
    d = client.call(DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})["groups"][0]
    assert d["error_code"] == 0 and d["group_state"] == "Stable" and len(d["members"]) == 2
    described = sorted(p for m in d["members"] for tp in m["assignment"]["topic_partitions"] for p in tp["partitions"])
    assert described == [0, 1, 2, 3]
    assert {tp["topic_name"] for m in d["members"] for tp in m["assignment"]["topic_partitions"]} == {topic}
    listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})["groups"]
    assert [(g["group_type"], g["protocol_type"]) for g in listed if g["group_id"] == group] == [("consumer", "consumer")]

    b.close()  # leaves: the survivor gets every partition back
    _poll([a], seen, lambda: len(a.assignment()) == 4)
    committed = a.committed([TopicPartition(topic, p) for p in range(4)], timeout=15)
    assert [tp.offset for tp in committed] == [5, 5, 5, 5]
    a.close()


def test_heartbeat_and_commit_fencing(target):
    """Raw ConsumerGroupHeartbeat: join, a stale epoch is fenced, commits need the current epoch."""
    topic = _topic(target, 1, 1)
    group, member = _name("g848"), str(uuid.uuid4())
    client = target.raw_coordinator(group)
    body = {"group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []}
    r = eventually(lambda: _ok(client.call(HEARTBEAT, 1, body)))
    epoch = r["member_epoch"]
    assert epoch > 0 and r["member_id"] == member and r["heartbeat_interval_ms"] > 0
    parts = [p for tp in r["assignment"]["topic_partitions"] for p in tp["partitions"]]
    assert parts == [0]
    stale = dict(body, member_epoch=epoch - 1, subscribed_topic_names=None, topic_partitions=None)
    assert client.call(HEARTBEAT, 1, stale)["error_code"] == FENCED_EPOCH
    unknown = dict(stale, member_id=str(uuid.uuid4()), member_epoch=epoch)
    assert client.call(HEARTBEAT, 1, unknown)["error_code"] == UNKNOWN_MEMBER

    def commit(member_id: str, member_epoch: int) -> int:
        r = client.call(OFFSET_COMMIT, 9, {"group_id": group, "generation_id_or_member_epoch": member_epoch,
                                           "member_id": member_id, "group_instance_id": None, "topics": [
                                               {"name": topic, "partitions": [{"partition_index": 0,
                                                                               "committed_offset": 1,
                                                                               "committed_metadata": ""}]}]})
        return r["topics"][0]["partitions"][0]["error_code"]
    assert commit(member, epoch + 1) == STALE_EPOCH
    assert commit("someone-else", epoch) == UNKNOWN_MEMBER
    assert commit(member, epoch) == 0

    def fetch(member_id: str, member_epoch: int) -> dict:
        return client.call(9, 9, {"groups": [{"group_id": group, "member_id": member_id, "member_epoch": member_epoch,
                                              "topics": [{"name": topic, "partition_indexes": [0]}]}],
                                  "require_stable": False})["groups"][0]
    assert fetch(member, epoch + 1)["error_code"] == STALE_EPOCH
    fetched = fetch(member, epoch)
    assert fetched["error_code"] == 0 and fetched["topics"][0]["partitions"][0]["committed_offset"] == 1
    leave = dict(body, member_epoch=-1, subscribed_topic_names=None, topic_partitions=None)
    r = client.call(HEARTBEAT, 1, leave)
    assert r["error_code"] == 0 and r["member_epoch"] == -1


def _ok(r: dict) -> dict:
    assert r["error_code"] == 0, r
    return r


def test_java_consumer_with_the_consumer_protocol(target, tmp_path):
    """The Java 4.x consumer (kafka-console-consumer from the kafka-tools jar) with group.protocol=consumer."""
    topic = _topic(target, 3, 3)
    group = _name("jg848")
    r = run_tool("kafkatools", "org.apache.kafka.tools.consumer.ConsoleConsumer", [
        "--bootstrap-server", target.bootstrap, "--topic", topic, "--group", group,
        "--command-property", "group.protocol=consumer", "--from-beginning", "--max-messages", "9",
        "--timeout-ms", "60000"], str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(r.stdout.split()) == sorted("%d-%d" % (p, i) for p in range(3) for i in range(3))
    client = target.raw_coordinator(group)  # a broker lists the groups it coordinates
    listed = client.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]
    assert [g["group_type"] for g in listed if g["group_id"] == group] == ["consumer"]


def test_consumer_groups_tool_describes_a_consumer_group(target, tmp_path):
    """kafka-consumer-groups --describe / --list --type on a live KIP-848 group (ConsumerGroupDescribe)."""
    topic = _topic(target, 2, 2)
    group = _name("cg848")
    c = _consumer(target, group)
    c.subscribe([topic])
    seen: dict = {}
    _poll([c], seen, lambda: len(seen) == 4 and all(tp.offset == 2 for tp in c.position(c.assignment())))
    c.commit(asynchronous=False)
    alive = threading.Event()
    poller = threading.Thread(target=lambda: [c.poll(0.2) for _ in iter(lambda: alive.is_set(), True)])
    poller.start()
    try:
        def tool(*args):
            r = run_tool("kafkatools", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                         ["--bootstrap-server", target.bootstrap, *args], str(tmp_path))
            assert r.returncode == 0, r.stderr[-3000:]
            return r.stdout
        rows = [r for r in table(tool("--describe", "--group", group), "GROUP") if r["TOPIC"] == topic]
        assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in rows) == [("0", "2", "0"), ("1", "2", "0")]
        assert all(r["CONSUMER-ID"] != "-" for r in rows)
        members = table(tool("--describe", "--members", "--group", group), "GROUP")
        assert [m["#PARTITIONS"] for m in members] == ["2"]
        listed = {r["GROUP"]: r["TYPE"] for r in table(tool("--list", "--type"), "GROUP")}
        assert listed[group] == "Consumer"
    finally:
        alive.set()
        poller.join()
        c.close()


@gateway_only
def test_a_group_id_serves_one_protocol_at_a_time(target):
    """Kafka 4 migrates a group between the protocols online; the gateway refuses the other one."""
    topic = _topic(target, 1, 1)
    group = _name("mixed")
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    seen: dict = {}
    _poll([c], seen, lambda: len(c.assignment()) == 1)
    client = target.raw_coordinator(group)
    body = {"group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic],
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}
    assert client.call(HEARTBEAT, 1, body)["error_code"] == GROUP_ID_NOT_FOUND
    c.close()
    assert client.call(HEARTBEAT, 1, body)["error_code"] == 0  # the classic member left


def test_regex_subscription(target):
    """librdkafka's `^regex` subscription travels as subscribed_topic_regex; matching topics are assigned."""
    prefix = _name("re")
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    names = [f"{prefix}-{i}" for i in range(2)]
    for f in admin.create_topics([NewTopic(n, num_partitions=2, replication_factor=1) for n in names]).values():
        f.result(15)
    c = _consumer(target, _name("g848re"))
    c.subscribe([f"^{prefix}-.*"])
    seen: dict = {}
    _poll([c], seen, lambda: len(c.assignment()) == 4)
    assert sorted((tp.topic, tp.partition) for tp in c.assignment()) == [(n, p) for n in names for p in range(2)]
    c.close()


def test_an_invalid_subscription_regex_is_refused_with_kafkas_code(target):
    """A subscribed_topic_regex that is not a valid (RE2/Java) pattern: INVALID_REGULAR_EXPRESSION (128)."""
    group = _name("badre")
    target.raw().call(10, 4, {"key_type": 0, "coordinator_keys": [group]})  # Kafka creates its offsets topic
    client = target.raw_coordinator(group)
    body = {"group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": None,
            "subscribed_topic_regex": "topic-[", "server_assignor": None, "topic_partitions": []}

    def answered() -> int:
        code = client.call(HEARTBEAT, 1, body)["error_code"]
        assert code not in (14, 15, 16), code  # a fresh Kafka loads its group coordinator first
        return code
    assert eventually(answered) == 128
