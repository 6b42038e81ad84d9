"""The client matrix cells not covered by test_kafka_sasl_ssl.py / test_kafka_java_sasl_ssl.py: SASL/PLAIN
with a wrong password or an unknown user, a client without SASL on the SASL_SSL listener, and a request
that needs a right on the cluster, each through the Java client (Kafka's own tools) and kafka-python,
with the exact error each reports. `python -m tests.security.validate_against_kafka matrix_cells` runs
the same functions against a real Apache Kafka broker with the same listener, users and ACLs."""
from __future__ import annotations

import logging

import pytest

from tests.security import kafka_gateway as kg
from tests.security import test_kafka_java_sasl_ssl as java
from tests.security.kafka_gateway import ALICE, ALICE_PW
from tests.security.test_kafka_sasl_ssl import gw as _sasl_gw  # noqa: F401 - the module's gateway, ACLs set

PLAIN_FAILED = "Authentication failed: Invalid username or password"
java_only = java.pytestmark


@pytest.fixture(scope="module")
def gw(_sasl_gw, tmp_path_factory):  # noqa: F811
    _sasl_gw.props_dir = str(tmp_path_factory.mktemp("matrix-props"))
    return _sasl_gw


@java_only
def test_java_plain_wrong_password_and_unknown_user(gw):
    for user, password in ((ALICE, "wrong"), ("mallory", "x")):
        r = java.console_produce(gw, user, password, "orders", ["x"], "PLAIN")
        assert f"org.apache.kafka.common.errors.SaslAuthenticationException: {PLAIN_FAILED}" in r.stdout + r.stderr, \
            r.stderr[-3000:]


@java_only
def test_java_without_sasl_times_out(gw):
    """A Java client speaking TLS only to a SASL_SSL listener: the broker closes the connection at
    its first request after ApiVersions, the client keeps reconnecting and its send times out."""
    path = f"{gw.props_dir}/tls-only.properties"
    with open(path, "w") as f:
        f.write(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={gw.certs.ca}\n")
    r = java.tool(java.PRODUCER, "--bootstrap-server", gw.kafka_bootstrap, "--topic", "orders",
                  "--command-config", path, "--producer-property", "max.block.ms=5000", input="x\n")
    out = r.stdout + r.stderr
    assert "org.apache.kafka.common.errors.TimeoutException: Topic orders not present in metadata after 5000 ms" \
        in out, out[-3000:]


@java_only
def test_java_cluster_authorization_denied(gw):
    """kafka-acls as alice, who has no right on the cluster: DescribeAcls needs DESCRIBE, CreateAcls ALTER.
    The exception's message is the broker's error_message: Kafka's names the request and the missing
    operation (`Request Request(processor=.., connectionId=..) needs DESCRIBE permission.`), the
    gateway sends none, so the client prints its default, `Cluster authorization failed.`"""
    props = java.props(gw, ALICE, ALICE_PW)
    listed = java.tool(java.ACLS, "--bootstrap-server", gw.kafka_bootstrap, "--command-config", props, "--list")
    out = listed.stdout + listed.stderr
    assert "Error while executing ACL command: org.apache.kafka.common.errors.ClusterAuthorizationException: " \
        in out, out[-3000:]
    added = java.tool(java.ACLS, "--bootstrap-server", gw.kafka_bootstrap, "--command-config", props, "--add",
                      "--allow-principal", "User:alice", "--operation", "Read", "--topic", "secret")
    out = added.stdout + added.stderr
    assert "Error while executing ACL command: org.apache.kafka.common.errors.ClusterAuthorizationException: " \
        in out, out[-3000:]


def test_kafka_python_plain_wrong_password_and_unknown_user(gw, caplog):
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    caplog.set_level(logging.INFO)
    for user, password in ((ALICE, "wrong"), ("mallory", "x")):
        caplog.clear()
        with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
            KafkaProducer(**kg.kafka_python(gw, user, password, "PLAIN", bootstrap_timeout_ms=3000))
        assert f"SaslAuthenticationFailedError: {PLAIN_FAILED}" in caplog.text


def test_kafka_python_without_sasl_cannot_bootstrap(gw):
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    conf = kg.kafka_python(gw, ALICE, ALICE_PW, bootstrap_timeout_ms=3000)
    for key in ("sasl_mechanism", "sasl_plain_username", "sasl_plain_password"):
        del conf[key]
    conf["security_protocol"] = "SSL"
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(**conf)


def test_kafka_python_cluster_authorization_denied(gw):
    from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, KafkaAdminClient
    from kafka.admin import ACLResourcePatternType, ResourcePattern, ResourcePatternFilter, ResourceType
    from kafka.errors import ClusterAuthorizationFailedError

    admin = KafkaAdminClient(**kg.kafka_python(gw, ALICE, ALICE_PW))
    try:
        everything = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                               permission_type=ACLPermissionType.ANY,
                               resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_acls(everything)
        acl = ACL(principal=f"User:{ALICE}", host="*", operation=ACLOperation.READ,
                  permission_type=ACLPermissionType.ALLOW, resource_pattern=ResourcePattern(ResourceType.TOPIC, "secret"))
        result = admin.create_acls([acl])
        assert not result["succeeded"]
        assert [err.__name__ for err in result["failed"]] == ["ClusterAuthorizationFailedError"]
    finally:
        admin.close()
