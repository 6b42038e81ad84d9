"""KIP-1071 streams groups at the protocol level (StreamsGroupHeartbeat 88, StreamsGroupDescribe 89):
the coordinator creates the internal topics of the topology a member sends, assigns tasks, moves a
task to a new member only after its owner reported it gone, and describes the group. Checked
against a real Kafka 4.3 first (kafka_target.py: KAFKA_REFERENCE_BOOTSTRAP)."""
from __future__ import annotations

import time
import uuid

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
import pytest
from kafka_target import eventually, target  # noqa: F401 (fixture)

from compat.jvm import run_tool

HEARTBEAT, DESCRIBE, LIST_GROUPS, ALTER_CONFIGS, DESCRIBE_CONFIGS, FIND_COORDINATOR = 88, 89, 16, 44, 32, 10
NONE, INVALID_REQUEST, UNKNOWN_MEMBER, FENCED_EPOCH, GROUP_ID_NOT_FOUND, INVALID_CONFIG = 0, 42, 25, 110, 69, 40
GROUP_RESOURCE, DEFAULT_SOURCE, GROUP_SOURCE = 32, 5, 8  # ConfigResource GROUP; ConfigSource DEFAULT / GROUP
MISSING_SOURCE_TOPICS = 1


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _topology(app: str, src: str) -> dict:
    """A word count's two subtopologies: src -> repartition; repartition -> counts (changelog)."""
    rep, changelog = f"{app}-counts-repartition", f"{app}-counts-changelog"
    return {"epoch": 0, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [src], "source_topic_regex": [], "state_changelog_topics": [],
         "repartition_sink_topics": [rep], "repartition_source_topics": [], "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [],
         "state_changelog_topics": [{"name": changelog, "partitions": 0, "replication_factor": 0, "topic_configs": [
             {"key": "cleanup.policy", "value": "compact"}, {"key": "message.timestamp.type", "value": "CreateTime"}]}],
         "repartition_sink_topics": [],
         "repartition_source_topics": [{"name": rep, "partitions": 0, "replication_factor": 0, "topic_configs": [
             {"key": "cleanup.policy", "value": "delete"}, {"key": "retention.ms", "value": "-1"}]}],
         "copartition_groups": []}]}


def _heartbeat(raw, group: str, member: str, epoch: int, topology=None, active=None, endpoint_epoch: int = 0,
               **fields) -> dict:
    body = {"group_id": group, "member_id": member, "member_epoch": epoch, "endpoint_information_epoch": endpoint_epoch,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
            "topology": topology, "active_tasks": [] if epoch == 0 else active,
            "standby_tasks": [] if epoch == 0 or active is not None else None,
            "warmup_tasks": [] if epoch == 0 or active is not None else None, "process_id": str(uuid.uuid4()) if epoch == 0 else None,
            "user_endpoint": None, "client_tags": [] if epoch == 0 else None, "task_offsets": None,
            "task_end_offsets": None, "shutdown_application": False, **fields}
    return raw.call(HEARTBEAT, 0, body)


def _tasks(resp_tasks) -> set:
    return {(t["subtopology_id"], p) for t in resp_tasks or () for p in t["partitions"]}


def _wire(tasks: set) -> list:
    by: dict = {}
    for sid, p in tasks:
        by.setdefault(sid, []).append(p)
    return [{"subtopology_id": sid, "partitions": sorted(ps)} for sid, ps in sorted(by.items())]


def _source(target, partitions: int = 4) -> str:
    name = _name("st-in")
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)
    return name


def _coordinator(raw, group: str) -> None:
    """FindCoordinator until it answers (on a fresh Kafka it creates the offsets topic first)."""
    r = raw.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    assert r["coordinators"][0]["error_code"] == NONE, r


def _join_until_tasks(raw, group, member, topology) -> dict:
    """Join, then heartbeat until tasks come (Kafka creates the internal topics asynchronously)."""
    eventually(lambda: _coordinator(raw, group))
    r = _heartbeat(raw, group, member, 0, topology)
    assert r["error_code"] == NONE, r
    deadline = time.monotonic() + 30
    while not _tasks(r["active_tasks"]) and time.monotonic() < deadline:
        time.sleep(0.3)
        r = _heartbeat(raw, group, member, r["member_epoch"], active=[])
        assert r["error_code"] == NONE, r
    return r


def test_join_creates_internal_topics_and_assigns_every_task(target):
    src, app = _source(target), _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    r = _join_until_tasks(raw, app, _name("m"), _topology(app, src))
    assert _tasks(r["active_tasks"]) == {(s, p) for s in "01" for p in range(4)}
    assert r["member_epoch"] > 0 and r["heartbeat_interval_ms"] > 0
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    md = admin.list_topics(timeout=10).topics
    assert len(md[f"{app}-counts-repartition"].partitions) == 4  # from the upstream source topic
    assert len(md[f"{app}-counts-changelog"].partitions) == 4  # its subtopology's task count
    res = ConfigResource(ConfigResource.Type.TOPIC, f"{app}-counts-changelog")
    assert admin.describe_configs([res])[res].result(15)["cleanup.policy"].value == "compact"
    d = raw.call(DESCRIBE, 0, {"group_ids": [app, _name("absent")], "include_authorized_operations": False})
    described, absent = d["groups"]
    assert described["group_state"] == "Stable" and absent["error_code"] == GROUP_ID_NOT_FOUND
    changelog = described["topology"]["subtopologies"][1]["state_changelog_topics"][0]
    assert changelog["partitions"] == 4  # as configured, with the configs the member sent
    assert {"key": "cleanup.policy", "value": "compact"} in changelog["topic_configs"]
    assert _heartbeat(raw, app, r["member_id"], -1)["error_code"] == NONE
    listed = {g["group_id"]: g for g in raw.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]}
    assert listed[app]["group_state"] == "Empty" and listed[app]["protocol_type"] == "streams"


def test_missing_source_topic_is_reported_without_tasks(target):
    app = _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    r = _heartbeat(raw, app, _name("m"), 0, _topology(app, _name("absent")))
    assert r["error_code"] == NONE, r
    assert MISSING_SOURCE_TOPICS in [s["status_code"] for s in r["status"]], r
    assert not _tasks(r["active_tasks"])


def test_second_member_gets_tasks_only_after_the_first_revoked_them(target):
    src, app = _source(target), _name("stapp")
    ra, rb = target.raw_coordinator(app), target.raw_coordinator(app)
    a, b = _name("a"), _name("b")
    r = _join_until_tasks(ra, app, a, _topology(app, src))
    a_epoch, a_tasks = r["member_epoch"], _tasks(r["active_tasks"])
    rb_resp = _heartbeat(rb, app, b, 0, _topology(app, src))
    assert rb_resp["error_code"] == NONE and not _tasks(rb_resp["active_tasks"]), rb_resp  # a still owns them
    b_epoch = rb_resp["member_epoch"]
    deadline = time.monotonic() + 30
    kept = a_tasks
    while kept == a_tasks and time.monotonic() < deadline:  # Kafka may delay the assignment a little
        r = _heartbeat(ra, app, a, a_epoch, active=_wire(a_tasks))
        assert r["error_code"] == NONE, r
        kept = _tasks(r["active_tasks"]) if r["active_tasks"] is not None else kept
        rb_resp = _heartbeat(rb, app, b, b_epoch, active=[])
        assert not _tasks(rb_resp["active_tasks"]), rb_resp  # a still owns every task
        time.sleep(0.3)
    assert kept < a_tasks and len(kept) == 4, r
    assert r["member_epoch"] == a_epoch  # it keeps its epoch until it revoked
    r = _heartbeat(ra, app, a, a_epoch, active=_wire(kept))  # a let the others go
    assert r["error_code"] == NONE and r["member_epoch"] > a_epoch, r
    rb_resp = eventually(lambda: _given(rb, app, b, b_epoch, 4))
    assert _tasks(rb_resp["active_tasks"]) == a_tasks - kept
    d = ra.call(DESCRIBE, 0, {"group_ids": [app], "include_authorized_operations": False})["groups"][0]
    assert d["error_code"] == NONE and d["topology"]["epoch"] == 0
    assert sorted(m["member_id"] for m in d["members"]) == sorted([a, b])
    assert sorted(s["subtopology_id"] for s in d["topology"]["subtopologies"]) == ["0", "1"]
    listed = {g["group_id"]: g for g in ra.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]}
    assert listed[app]["group_type"] == "streams"


def _given(raw, group, member, epoch, n) -> dict:
    r = _heartbeat(raw, group, member, epoch, active=[])
    assert r["error_code"] == NONE and len(_tasks(r["active_tasks"])) == n, r
    return r


def test_unknown_member_and_wrong_epoch_are_refused(target):
    src, app = _source(target), _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    member = _name("m")
    r = _join_until_tasks(raw, app, member, _topology(app, src))
    assert _heartbeat(raw, app, _name("x"), 3, active=[])["error_code"] == UNKNOWN_MEMBER
    assert _heartbeat(raw, app, member, r["member_epoch"] + 5, active=[])["error_code"] == FENCED_EPOCH
    assert _heartbeat(raw, app, "", 0, _topology(app, src))["error_code"] == INVALID_REQUEST
    consumer = raw.call(68, 1, {"group_id": app, "member_id": _name("c"), "member_epoch": 0, "instance_id": None,
                                "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": [src],
                                "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})
    assert consumer["error_code"] == GROUP_ID_NOT_FOUND, consumer  # a streams group is not a consumer group


def test_kafka_streams_groups_tool_lists_and_describes(target, tmp_path):
    """kafka-streams-groups.sh (StreamsGroupCommand, kafka-tools 4.2) over ListGroups and
    StreamsGroupDescribe."""
    src, app = _source(target), _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    member = _name("m")
    _join_until_tasks(raw, app, member, _topology(app, src))

    def tool(*args: str) -> str:
        r = run_tool("kafkatools", "org.apache.kafka.tools.streams.StreamsGroupCommand",
                     ["--bootstrap-server", target.bootstrap, *args], str(tmp_path))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        return r.stdout

    assert app in tool("--list").split()
    lines = [line.split(None, 4) for line in tool("--describe", "--group", app, "--members").splitlines()
             if line.startswith(app)]
    assert [(cols[0], cols[1]) for cols in lines] == [(app, member)], lines
    assert lines[0][4].replace(" ", "").startswith("ACTIVE:0:[0,1,2,3];1:[0,1,2,3];"), lines


def _alter_group(raw, group: str, name: str, value: str | None, op: int = 0) -> dict:
    """IncrementalAlterConfigs on the GROUP resource: the one response."""
    r = raw.call(ALTER_CONFIGS, 1, {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
        {"name": name, "config_operation": op, "value": value}]}], "validate_only": False})
    return r["responses"][0]


def _group_configs(raw, group: str) -> dict:
    """DescribeConfigs of the GROUP resource: name -> (value, source, synonyms)."""
    r = raw.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group,
                                                      "configuration_keys": None}],
                                       "include_synonyms": True, "include_documentation": False})["results"][0]
    assert r["error_code"] == NONE, r
    return {c["name"]: (c["value"], c["config_source"], [(s["name"], s["value"], s["source"]) for s in c["synonyms"]])
            for c in r["configs"]}


def test_streams_group_configs_are_checked_described_and_used(target):
    """streams.* group configs: Kafka's broker bounds and messages, GROUP_CONFIG / DEFAULT_CONFIG sources,
    and the heartbeat interval a member is given."""
    src, app = _source(target, 1), _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    for name, value, message in (
            ("streams.heartbeat.interval.ms", "4999",
             "streams.heartbeat.interval.ms must be greater than or equal to group.streams.min.heartbeat.interval.ms"),
            ("streams.heartbeat.interval.ms", "15001",
             "streams.heartbeat.interval.ms must be less than or equal to group.streams.max.heartbeat.interval.ms"),
            ("streams.session.timeout.ms", "44999",
             "streams.session.timeout.ms must be greater than or equal to group.streams.min.session.timeout.ms"),
            ("streams.session.timeout.ms", "60001",
             "streams.session.timeout.ms must be less than or equal to group.streams.max.session.timeout.ms"),
            ("streams.num.standby.replicas", "3",
             "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
            ("streams.num.standby.replicas", "-1",
             "Invalid value -1 for configuration streams.num.standby.replicas: Value must be at least 0")):
        r = _alter_group(raw, app, name, value)
        assert (r["error_code"], r["error_message"]) == (INVALID_CONFIG, message), (name, value, r)
    described = _group_configs(raw, app)
    assert described["streams.heartbeat.interval.ms"][:2] == ("5000", DEFAULT_SOURCE)
    assert described["streams.session.timeout.ms"][:2] == ("45000", DEFAULT_SOURCE)
    assert described["streams.num.standby.replicas"][:2] == ("0", DEFAULT_SOURCE)
    assert _alter_group(raw, app, "streams.heartbeat.interval.ms", "7000")["error_code"] == NONE
    assert _alter_group(raw, app, "streams.session.timeout.ms", "50000")["error_code"] == NONE
    value, source, synonyms = _group_configs(raw, app)["streams.heartbeat.interval.ms"]
    assert (value, source) == ("7000", GROUP_SOURCE)
    assert synonyms == [("streams.heartbeat.interval.ms", "7000", GROUP_SOURCE),
                        ("group.streams.heartbeat.interval.ms", "5000", DEFAULT_SOURCE)]
    assert _group_configs(raw, app)["streams.session.timeout.ms"][:2] == ("50000", GROUP_SOURCE)
    r = _join_until_tasks(raw, app, _name("m"), _topology(app, src))
    assert r["heartbeat_interval_ms"] == 7000, r
    assert _alter_group(raw, app, "streams.heartbeat.interval.ms", None, op=1)["error_code"] == NONE  # DELETE
    assert _group_configs(raw, app)["streams.heartbeat.interval.ms"][:2] == ("5000", DEFAULT_SOURCE)
    eventually(lambda: _interval(raw, app, r, 5000))


def _interval(raw, group: str, joined: dict, expected: int) -> dict:
    r = _heartbeat(raw, group, joined["member_id"], joined["member_epoch"], active=None)
    assert r["error_code"] == NONE and r["heartbeat_interval_ms"] == expected, r
    return r


def test_standby_tasks_on_the_other_member(target):
    """One standby replica (the group config streams.num.standby.replicas): each member has the other's
    stateful active tasks as standbys once stable."""
    src, app = _source(target, 2), _name("stapp")
    ra, rb = target.raw_coordinator(app), target.raw_coordinator(app)
    r = _alter_group(ra, app, "streams.num.standby.replicas", "1")
    assert r["error_code"] == NONE, r
    eventually(lambda: _coordinator(ra, app))
    a, b = _name("a"), _name("b")
    held = {a: (0, set(), set()), b: (0, set(), set())}
    deadline = time.monotonic() + 60
    topology = _topology(app, src)
    while time.monotonic() < deadline:
        for raw, member in ((ra, a), (rb, b)):
            epoch, active, standby = held[member]
            r = _heartbeat(raw, app, member, epoch, topology if epoch == 0 else None, active=_wire(active))
            assert r["error_code"] == NONE, r
            held[member] = (r["member_epoch"],
                            _tasks(r["active_tasks"]) if r["active_tasks"] is not None else active,
                            _tasks(r["standby_tasks"]) if r["standby_tasks"] is not None else standby)
            assert not held[member][1] & held[member][2], held  # never active and standby at once
        (_ea, act_a, stb_a), (_eb, act_b, stb_b) = held[a], held[b]
        if act_a and act_b and stb_a == stateful(act_b) and stb_b == stateful(act_a):
            break
        time.sleep(0.3)
    assert act_a | act_b == {(s, p) for s in "01" for p in range(2)} and not act_a & act_b, held
    assert stb_a == stateful(act_b) and stb_b == stateful(act_a), held  # the stateful tasks only


def stateful(tasks: set) -> set:
    """The tasks of subtopology 1, the one with a changelog (standbys are kept for state only)."""
    return {(sid, p) for sid, p in tasks if sid == "1"}


ASSIGNMENT_DELAYED = 5


def test_more_streams_group_configs_are_checked_and_described(target):
    """Kafka 4.3's other streams group configs: the initial rebalance delay and the assignment interval
    (within the broker's bounds), with Kafka's messages; the assignor offload switch is no group config."""
    app = _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    for name, value, message in (
            ("streams.initial.rebalance.delay.ms", "-1",
             "Invalid value -1 for configuration streams.initial.rebalance.delay.ms: Value must be at least 0"),
            ("streams.assignment.interval.ms", "15001",
             "streams.assignment.interval.ms must be less than or equal to group.streams.max.assignment.interval.ms"),
            ("streams.assignment.interval.ms", "-1",
             "Invalid value -1 for configuration streams.assignment.interval.ms: Value must be at least 0"),
            ("streams.assignment.interval.ms", "soon",
             "Invalid value soon for configuration streams.assignment.interval.ms: Not a number of type INT"),
            ("streams.assignor.offload.enable", "false",  # a broker config only in Kafka 4.3
             "Unknown group config name: streams.assignor.offload.enable")):
        r = _alter_group(raw, app, name, value)
        assert (r["error_code"], r["error_message"]) == (INVALID_CONFIG, message), (name, value, r)
    for name, value in (("streams.initial.rebalance.delay.ms", "2500"), ("streams.assignment.interval.ms", "0")):
        assert _alter_group(raw, app, name, value)["error_code"] == NONE
        assert _group_configs(raw, app)[name][:2] == (value, GROUP_SOURCE)


def test_initial_rebalance_delay_holds_the_first_assignment(target):
    """With streams.initial.rebalance.delay.ms set, a new group's first member is told ASSIGNMENT_DELAYED and
    given no task until the delay has passed (at the group epoch meanwhile); then it gets every task."""
    src, app = _source(target, 2), _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    assert _alter_group(raw, app, "streams.initial.rebalance.delay.ms", "4000")["error_code"] == NONE
    eventually(lambda: _coordinator(raw, app))
    member = _name("m")
    began = time.monotonic()
    r = _heartbeat(raw, app, member, 0, _topology(app, src))
    assert r["error_code"] == NONE and not _tasks(r["active_tasks"]) and r["member_epoch"] > 0, r
    assert ASSIGNMENT_DELAYED in [s["status_code"] for s in r["status"]], r
    while not _tasks(r["active_tasks"]) and time.monotonic() - began < 30:
        time.sleep(0.5)
        r = _heartbeat(raw, app, member, r["member_epoch"], active=[])
        assert r["error_code"] == NONE, r
        if time.monotonic() - began < 3:  # well inside the delay
            assert not _tasks(r["active_tasks"]), r
            assert [s["status_detail"] for s in r["status"]] == [
                "Assignment delayed due to the configured initial rebalance delay."], r
    assert _tasks(r["active_tasks"]) == {(s, p) for s in "01" for p in range(2)}, r
    assert time.monotonic() - began >= 3.5


def test_static_membership_and_warmups_are_refused_as_on_kafka_4_3(target):
    """Kafka 4.3 has no static membership in streams groups (its Streams client refuses group.instance.id
    with group.protocol=streams; the coordinator refuses an instance id): a join with one is refused and
    makes no group, a static leave without one is invalid; nor warm-up tasks (its assignor gives none):
    a member reporting some is refused."""
    src, app = _source(target, 1), _name("stapp")
    raw = target.raw_coordinator(app)  # the group's coordinator (--shards: the shard it hashes to)
    eventually(lambda: _coordinator(raw, app))
    member = _name("m")
    r = _heartbeat(raw, app, member, 0, _topology(app, src), instance_id="instance-1")
    assert (r["error_code"], r["error_message"]) == (INVALID_REQUEST, "Static membership is not yet supported."), r
    d = raw.call(DESCRIBE, 0, {"group_ids": [app], "include_authorized_operations": False})["groups"][0]
    assert d["error_code"] == GROUP_ID_NOT_FOUND, d
    r = _heartbeat(raw, app, member, 0, _topology(app, src))  # the same member without an instance id
    assert r["error_code"] == NONE, r
    static_leave = _heartbeat(raw, app, member, -2, active=None)
    assert (static_leave["error_code"], static_leave["error_message"]) == (INVALID_REQUEST,
                                                                           "InstanceId can't be null."), static_leave
    warmups = _heartbeat(raw, app, member, r["member_epoch"], active=[], warmup_tasks=[
        {"subtopology_id": "0", "partitions": [0]}])
    assert (warmups["error_code"], warmups["error_message"]) == (INVALID_REQUEST,
                                                                 "WarmupTasks are not supported yet."), warmups
