"""The streams-group APIs' checks (KIP-1071) over SASL_SSL with a raw client: StreamsGroupHeartbeat
needs READ on the group and DESCRIBE on every topic of the topology, and creates the internal topics
only with CREATE (on the cluster or on each topic: without it the member gets a MISSING_INTERNAL_TOPICS
status naming them); StreamsGroupDescribe needs DESCRIBE on the group and hides a group whose topology
names a topic the principal may not describe. Also run against real Kafka by validate_against_kafka.py."""
from __future__ import annotations

import re
import socket
import ssl
import time
import uuid

from confluent_kafka.admin import AclBinding, AclOperation as AclOp, AclPermissionType, AdminClient, NewTopic
from confluent_kafka.admin import ResourcePatternType, ResourceType

from tests.kafka.kafka_raw import RawClient
from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ADMIN, ADMIN_PW, ALICE, ALICE_PW
from tests.security.test_kafka_java_sasl_ssl import gw, pytestmark  # noqa: F401 - fixture and skip

HEARTBEAT, DESCRIBE = 88, 89
NONE, TOPIC_DENIED, GROUP_DENIED, GROUP_ID_NOT_FOUND = 0, 29, 30, 69
MISSING_INTERNAL_TOPICS = 3
COORDINATOR_NOT_READY = (14, 15, 16)  # load in progress, not available, not coordinator


class SaslRawClient(RawClient):
    """RawClient over TLS, authenticated with SASL/PLAIN (SaslHandshake v1, SaslAuthenticate v2)."""

    def __init__(self, gw, user: str, password: str) -> None:  # noqa: F811
        host, port = gw.kafka_bootstrap.rsplit(":", 1)
        context = ssl.create_default_context(cafile=gw.certs.ca)
        context.check_hostname = False
        self.sock = context.wrap_socket(socket.create_connection((host, int(port)), timeout=60))
        self.correlation = 0
        assert self.call(17, 1, {"mechanism": "PLAIN"})["error_code"] == NONE
        auth = self.call(36, 2, {"auth_bytes": b"\0" + user.encode() + b"\0" + password.encode()})
        assert auth["error_code"] == NONE, auth


def _topology(app: str, src: str) -> dict:
    rep, changelog = f"{app}-agg-repartition", f"{app}-agg-changelog"
    return {"epoch": 0, "subtopologies": [
        {"subtopology_id": "0", "source_topics": [src], "source_topic_regex": [], "state_changelog_topics": [],
         "repartition_sink_topics": [rep], "repartition_source_topics": [], "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [],
         "state_changelog_topics": [{"name": changelog, "partitions": 0, "replication_factor": 0,
                                     "topic_configs": []}],
         "repartition_sink_topics": [],
         "repartition_source_topics": [{"name": rep, "partitions": 0, "replication_factor": 0, "topic_configs": []}],
         "copartition_groups": []}]}


def _join(raw, group: str, topology: dict) -> dict:
    """Join a member, retrying while the coordinator is not ready (a fresh Kafka makes its offsets topic)."""
    deadline = time.monotonic() + 60
    while True:
        r = _join_once(raw, group, topology)
        if r["error_code"] not in COORDINATOR_NOT_READY or time.monotonic() > deadline:
            return r
        raw.call(10, 4, {"key_type": 0, "coordinator_keys": [group]})  # FindCoordinator makes the offsets topic
        time.sleep(0.5)


def _join_once(raw, group: str, topology: dict) -> dict:
    return raw.call(HEARTBEAT, 0, {
        "group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "endpoint_information_epoch": 0,
        "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000, "topology": topology,
        "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": str(uuid.uuid4()),
        "user_endpoint": None, "client_tags": [], "task_offsets": None, "task_end_offsets": None,
        "shutdown_application": False})


def _describe(raw, *groups: str) -> list:
    return raw.call(DESCRIBE, 0, {"group_ids": list(groups), "include_authorized_operations": False})["groups"]


def _setup(gw, app: str) -> str:  # noqa: F811
    """A source topic alice may describe; alice may READ and DESCRIBE the groups `<app>*` and DESCRIBE the
    topics `<app>*` (not create them)."""
    src = f"{app}-in"
    admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW))
    admin.create_topics([NewTopic(src, 2)])[src].result(60)
    alice = f"User:{ALICE}"
    acls = [AclBinding(ResourceType.GROUP, app, ResourcePatternType.PREFIXED, alice, "*", op, AclPermissionType.ALLOW)
            for op in (AclOp.READ, AclOp.DESCRIBE)]
    acls.append(AclBinding(ResourceType.TOPIC, app, ResourcePatternType.PREFIXED, alice, "*", AclOp.DESCRIBE,
                           AclPermissionType.ALLOW))
    for f in admin.create_acls(acls).values():
        f.result(60)
    time.sleep(1)  # Kafka applies new ACLs asynchronously
    return src


def _statuses(resp: dict) -> list:
    return [(s["status_code"], s["status_detail"]) for s in resp["status"] or ()]


def test_streams_heartbeat_needs_read_on_the_group_and_describe_on_the_topics(gw):  # noqa: F811
    app = f"alice-st-{uuid.uuid4().hex[:6]}"
    src = _setup(gw, app)
    raw = SaslRawClient(gw, ALICE, ALICE_PW)
    try:
        r = _join(raw, f"other-{app}", _topology(app, src))  # no ACL on the group
        assert (r["error_code"], r["error_message"]) == (GROUP_DENIED, None), r
        r = _join(raw, app, _topology(app, "orders-not-described"))  # a source topic she may not describe
        assert (r["error_code"], r["error_message"]) == (TOPIC_DENIED, None), r
        r = _join(raw, app, _topology(app, src))  # all described, but she may not create the internal topics
        assert r["error_code"] == NONE, r
        internal = {f"{app}-agg-changelog", f"{app}-agg-repartition"}
        missing = [detail for code, detail in _statuses(r) if code == MISSING_INTERNAL_TOPICS]
        m = re.fullmatch(r"Internal topics are missing: (.*); Unauthorized to CREATE on topics (.*)\.", missing[0])
        assert len(missing) == 1 and m, r  # the names in any order (Kafka lists a hash set)
        assert set(m.group(1).split(", ")) == set(m.group(2).split(", ")) == internal, r
        admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW))
        assert not {f"{app}-agg-changelog", f"{app}-agg-repartition"} & set(admin.list_topics(timeout=30).topics)
    finally:
        raw.close()


def test_streams_describe_needs_describe_on_the_group_and_its_topics(gw):  # noqa: F811
    app = f"alice-sd-{uuid.uuid4().hex[:6]}"
    src = _setup(gw, app)
    admin_raw = SaslRawClient(gw, ADMIN, ADMIN_PW)
    raw = SaslRawClient(gw, ALICE, ALICE_PW)
    try:
        hidden = f"{app}-hidden"  # a group she may describe whose topology reads a topic she may not describe
        admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW))
        admin.create_topics([NewTopic("st-secret-in", 1)])["st-secret-in"].result(60)
        for group, source in ((app, src), (hidden, "st-secret-in")):
            r = _join(admin_raw, group, _topology(group, source))
            assert r["error_code"] == NONE, r
        described = {g["group_id"]: g for g in _describe(raw, f"other-{app}", app, hidden)}
        other = described[f"other-{app}"]
        assert (other["error_code"], other["error_message"], other["topology"], other["members"]) == \
            (GROUP_DENIED, None, None, []), other
        assert [g["group_id"] for g in _describe(raw, app, f"other-{app}")] == [f"other-{app}", app]  # denied first
        assert described[app]["error_code"] == NONE and len(described[app]["members"]) == 1, described[app]
        h = described[hidden]
        assert (h["error_code"], h["error_message"], h["topology"], h["members"], h["group_state"]) == \
            (TOPIC_DENIED, "The described group uses topics that the client is not authorized to describe.", None,
             [], ""), h
    finally:
        raw.close()
        admin_raw.close()


def test_streams_heartbeat_creates_internal_topics_with_create_on_them(gw):  # noqa: F811
    app = f"alice-sc-{uuid.uuid4().hex[:6]}"
    src = _setup(gw, app)
    admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW))
    acl = AclBinding(ResourceType.TOPIC, app, ResourcePatternType.PREFIXED, f"User:{ALICE}", "*", AclOp.CREATE,
                     AclPermissionType.ALLOW)  # CREATE on the topics, not on the cluster
    for f in admin.create_acls([acl]).values():
        f.result(60)
    time.sleep(1)
    raw = SaslRawClient(gw, ALICE, ALICE_PW)
    try:
        r = _join(raw, app, _topology(app, src))
        assert r["error_code"] == NONE, r
        assert not any("Unauthorized" in (detail or "") for _code, detail in _statuses(r)), r
        internal = {f"{app}-agg-changelog", f"{app}-agg-repartition"}
        deadline = time.monotonic() + 30  # Kafka creates them asynchronously
        while internal - set(admin.list_topics(timeout=30).topics) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not internal - set(admin.list_topics(timeout=30).topics)
    finally:
        raw.close()
