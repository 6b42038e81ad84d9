"""The share-group APIs' group checks over SASL_SSL with the Kafka 4.x Java tools: alice, given DESCRIBE
(only) on group `shared-view` (so FindCoordinator lets her through), may describe it and its offsets
(ShareGroupDescribe, DescribeShareGroupOffsets) but is refused by the share consumer (ShareGroupHeartbeat
needs READ) and when deleting its offsets (DeleteShareGroupOffsets needs DELETE). Also run against real
Kafka by validate_against_kafka.py."""
from __future__ import annotations

from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient
from confluent_kafka.admin import ResourcePatternType, ResourceType

from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ADMIN, ADMIN_PW, ALICE, ALICE_PW
from tests.security.test_kafka_java_sasl_ssl import gw, props, pytestmark, tool  # noqa: F401 - fixture and skip

SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
DENIED = "GroupAuthorizationException"
GROUP = "shared-view"


def _alice_may_describe_the_group(gw) -> None:  # noqa: F811
    admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW))
    acl = AclBinding(ResourceType.GROUP, GROUP, ResourcePatternType.LITERAL, f"User:{ALICE}", "*",
                     AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    for f in admin.create_acls([acl]).values():
        f.result(30)


def _as_alice(gw, main: str, *args: str) -> str:  # noqa: F811
    r = tool(main, "--bootstrap-server", gw.kafka_bootstrap, *args,
             "--command-config", props(gw, ALICE, ALICE_PW),
             timeout=90)
    return r.stdout + r.stderr


def test_share_consumer_needs_read_on_the_group(gw):  # noqa: F811
    _alice_may_describe_the_group(gw)
    out = _as_alice(gw, SHARE_CONSUMER, "--topic", "orders", "--group", GROUP, "--max-messages", "1",
                    "--timeout-ms", "20000")
    assert f"ShareGroupHeartbeatRequest failed due to group authorization failure: Not authorized to access group: " \
           f"{GROUP}" in out, out[-3000:]


def test_share_group_admin_needs_describe_and_delete_on_the_group(gw):  # noqa: F811
    _alice_may_describe_the_group(gw)
    out = _as_alice(gw, SHARE_GROUPS, "--describe", "--group", GROUP)
    assert DENIED not in out and "authorization" not in out, out[-3000:]
    out = _as_alice(gw, SHARE_GROUPS, "--describe", "--offsets", "--group", GROUP)
    assert DENIED not in out and "authorization" not in out, out[-3000:]
    out = _as_alice(gw, SHARE_GROUPS, "--delete-offsets", "--group", GROUP, "--topic", "orders")
    assert "Error: Group authorization failed." in out, out[-3000:]
