"""The share-group APIs' topic checks over SASL_SSL with the Kafka 4.x Java tools (alice may read the
groups `alice-share*`): the share consumer is refused a subscribed topic she may not describe
(ShareGroupHeartbeat) and the records of a topic she may describe but not read (ShareFetch); the
share-group command cannot reset or delete her group's offsets of a topic she may not read. Also run
against real Kafka by validate_against_kafka.py."""
from __future__ import annotations

import re

from confluent_kafka import Producer
from confluent_kafka.admin import AclBinding, AclOperation as AclOp, AclPermissionType, AdminClient, NewTopic
from confluent_kafka.admin import ResourcePatternType, ResourceType

from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ADMIN, ADMIN_PW, ALICE, ALICE_PW
from tests.security.test_kafka_java_sasl_ssl import gw, props, pytestmark, tool  # noqa: F401 - fixture and skip

SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
SECRET, DESCRIBE_ONLY = "share-secret", "share-describe-only"


def _setup(gw) -> None:  # noqa: F811
    """Topics SECRET (no ACL for alice) and DESCRIBE_ONLY (DESCRIBE for alice), one record each;
    alice may READ and DELETE the groups alice-share*."""
    admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW))
    for f in admin.create_topics([NewTopic(SECRET, 1), NewTopic(DESCRIBE_ONLY, 1)]).values():
        try:
            f.result(60)
        except Exception as exc:  # noqa: BLE001 - made by an earlier test
            assert "already exists" in str(exc), exc
    alice = f"User:{ALICE}"
    acls = [AclBinding(ResourceType.TOPIC, DESCRIBE_ONLY, ResourcePatternType.LITERAL, alice, "*", AclOp.DESCRIBE,
                       AclPermissionType.ALLOW)]
    acls += [AclBinding(ResourceType.GROUP, "alice-share", ResourcePatternType.PREFIXED, alice, "*", op,
                        AclPermissionType.ALLOW) for op in (AclOp.READ, AclOp.DELETE)]
    for f in admin.create_acls(acls).values():
        f.result(60)
    p = Producer(kg.librdkafka(gw, ADMIN, ADMIN_PW))
    for topic in (SECRET, DESCRIBE_ONLY):
        p.produce(topic, b"r")
    assert p.flush(30) == 0


def _share_consume(gw, user: str, password: str, topic: str, group: str, wait_ms: int = 20000) -> str:  # noqa: F811
    r = tool(SHARE_CONSUMER, "--bootstrap-server", gw.kafka_bootstrap, "--topic", topic, "--group", group,
             "--max-messages", "1", "--timeout-ms", str(wait_ms), "--command-config", props(gw, user, password),
             timeout=wait_ms / 1000 + 90)
    return r.stdout + r.stderr


def _share_groups(gw, user: str, password: str, *args: str) -> str:  # noqa: F811
    r = tool(SHARE_GROUPS, "--bootstrap-server", gw.kafka_bootstrap, *args,
             "--command-config", props(gw, user, password), timeout=90)
    return r.stdout + r.stderr


def test_share_consumer_needs_describe_on_subscribed_topics(gw):  # noqa: F811
    _setup(gw)
    out = _share_consume(gw, ALICE, ALICE_PW, SECRET, "alice-share-heartbeat")
    assert "ShareGroupHeartbeatRequest failed for member" in out, out[-3000:]
    assert "due to TOPIC_AUTHORIZATION_FAILED: null" in out, out[-3000:]
    assert f"TopicAuthorizationException: Not authorized to access topics: [{SECRET}]" in out, out[-3000:]


def test_share_fetch_needs_read_on_the_topic(gw):  # noqa: F811
    _setup(gw)
    out = _share_consume(gw, ALICE, ALICE_PW, DESCRIBE_ONLY, "alice-share-fetch", wait_ms=60000)  # Kafka may
    # take a while to assign a new share group's partitions
    assert "ShareGroupHeartbeatRequest failed" not in out, out[-3000:]  # the heartbeat let her in
    assert f"TopicAuthorizationException: Not authorized to access topics: [{DESCRIBE_ONLY}]" in out, out[-3000:]
    assert "Processed a total of 0 messages" in out, out[-3000:]


def test_share_group_offsets_need_read_on_the_topic(gw):  # noqa: F811
    _setup(gw)
    group = "alice-share-offsets"
    _share_consume(gw, ADMIN, ADMIN_PW, SECRET, group)  # the group gets state on SECRET (nothing new to read)
    out = _share_groups(gw, ADMIN, ADMIN_PW, "--group", group, "--describe", "--offsets")
    assert re.search(rf"{group}\s+{SECRET}\s+0\s", out), out[-3000:]
    out = _share_groups(gw, ALICE, ALICE_PW, "--group", group, "--describe", "--offsets")  # SECRET left out
    assert f"Share group '{group}' has no offset information." in out, out[-3000:]
    out = _share_groups(gw, ALICE, ALICE_PW, "--group", group, "--reset-offsets", "--to-earliest", "--topic", SECRET,
                        "--execute")
    assert "Error: Executing share group command failed due to Topic authorization failed." in out, out[-3000:]
    out = _share_groups(gw, ALICE, ALICE_PW, "--group", group, "--delete-offsets", "--topic", SECRET)
    assert re.search(rf"{SECRET}\s+Error: Topic authorization failed.", out), out[-3000:]
    out = _share_groups(gw, ADMIN, ADMIN_PW, "--group", group, "--describe", "--offsets")  # nothing was deleted
    assert re.search(rf"{group}\s+{SECRET}\s+0\s", out), out[-3000:]
