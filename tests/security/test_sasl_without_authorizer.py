"""A SASL listener without `--authorizer acl`, as Kafka without `authorizer.class.name`: clients must
authenticate (SCRAM, PLAIN) against the data dir's user store, then any authenticated principal may do
everything; the ACL APIs answer SECURITY_DISABLED. The same checks run against Kafka 4.3.1 with
`python -m tests.security.test_sasl_without_authorizer` (SASL_SSL, no authorizer; all pass,
docs/security.md)."""
from __future__ import annotations

import os
import sys
import tempfile
import time
import types
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)

from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient
from kafka.admin import ResourcePatternFilter, ResourceType as KpResourceType
from kafka.errors import SecurityDisabledError

from client import Admin, Message, Producer
from gateway.listeners import parse_listener
from security import authentication_for
from security.credentials import CredentialStore
from tests.gateway_process import GatewayProcess
from tests.security import kafka_gateway as kg
from tests.security.certs import make_certs
from tests.security.kafka_gateway import ALICE, ALICE_PW
from tests.security.test_kafka_sasl_ssl import SCRAM_FAILED, consume_one, produce


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("sasl-no-acl"))
    certs = make_certs(os.path.join(base, "certs"))
    data = os.path.join(base, "data")
    CredentialStore(os.path.join(data, "config")).set_password(ALICE, ALICE_PW)
    g = GatewayProcess(data, extra_args=["--kafka-security-protocol", "SASL_SSL", "--tls-cert", certs.server_cert,
                                         "--tls-key", certs.server_key])
    g.certs = certs
    yield g.start()
    g.stop()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_a_scram_user_creates_a_topic_produces_and_consumes(gw):
    conf = kg.librdkafka(gw, ALICE, ALICE_PW, "SCRAM-SHA-512")
    topic = _name("free")
    admin = AdminClient(conf)
    for f in admin.create_topics([NewTopic(topic, 1)]).values():
        f.result(30)
    time.sleep(1)  # Kafka: the new topic's leadership settles
    assert produce(conf, topic) == [(None, None)]
    assert consume_one(conf, _name("any-group"), topic) == b"value"


@pytest.mark.parametrize("user,password", [(ALICE, "wrong"), ("mallory", "whatever")])
def test_a_wrong_password_or_unknown_user_fails_authentication(gw, user, password):
    code, text = produce(kg.librdkafka(gw, user, password), "anything")[0]
    assert code == KafkaError._AUTHENTICATION
    assert f"SASL authentication error: {SCRAM_FAILED.format('SCRAM-SHA-256')}" in text


def test_acl_apis_answer_security_disabled(gw):
    admin = AdminClient(kg.librdkafka(gw, ALICE, ALICE_PW))
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:x", "*", AclOperation.READ,
                         AclPermissionType.ALLOW)
    any_acl = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                               AclPermissionType.ANY)
    futures = [*admin.create_acls([binding]).values(), *admin.delete_acls([any_acl]).values()]
    codes = [_error_code(f) for f in futures]
    assert codes == [KafkaError.SECURITY_DISABLED] * 2, codes
    assert admin.describe_acls(any_acl).result(30) == []  # librdkafka drops DescribeAcls' error code
    everything = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                           resource_pattern=ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY))
    client = KafkaAdminClient(**kg.kafka_python(gw, ALICE, ALICE_PW))
    try:
        with pytest.raises(SecurityDisabledError):  # kafka-python raises it
            client.describe_acls(everything)
    finally:
        client.close()


def _error_code(future):
    """The error code the admin call failed with, or its result when it succeeded."""
    try:
        return future.result(30)
    except KafkaException as exc:
        return exc.args[0].code()


def test_any_user_adds_a_scram_user_who_then_logs_in(gw):
    """No authorizer: AlterUserScramCredentials is open to every authenticated principal, and the new
    user's login is checked against the same store."""
    bob = _name("bob")
    upsert = UserScramCredentialUpsertion(bob, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"bob-pw")
    admin = AdminClient(kg.librdkafka(gw, ALICE, ALICE_PW))
    admin.alter_user_scram_credentials([upsert])[bob].result(30)
    for _ in range(20):  # Kafka: the credential reaches the broker through its metadata log
        result = produce(kg.librdkafka(gw, bob, "bob-pw"), _name("bobs"))
        if result == [(None, None)]:
            break
        time.sleep(0.5)
    assert result == [(None, None)]
    code, _text = produce(kg.librdkafka(gw, bob, "not-bobs"), "anything")[0]
    assert code == KafkaError._AUTHENTICATION


def test_the_remoting_port_is_unchanged_unsigned_requests_are_served(gw):
    """Gateway only: remoting signatures stay tied to --authorizer acl, a SASL Kafka listener changes nothing."""
    admin = Admin(gw.namesrv).start()
    try:
        admin.create_topic("remoting-open", queues=1)
    finally:
        admin.shutdown()
    producer = Producer("open-pg", gw.namesrv).start()
    try:
        assert producer.send(Message("remoting-open", b"unsigned")).msg_id
    finally:
        producer.shutdown()


def test_the_user_store_is_bootstrapped_only_for_sasl_listeners(tmp_path):
    """Without an authorizer the admin password makes user admin only when a listener asks for SASL."""
    env = {"ROCKETGATE_ADMIN_PASSWORD": "pw"}
    plain = types.SimpleNamespace(kafka_security_protocol="PLAINTEXT", listeners=[])
    assert authentication_for(plain, None, str(tmp_path / "a"), env) is None
    assert not os.path.exists(tmp_path / "a")
    extra = types.SimpleNamespace(kafka_security_protocol="PLAINTEXT", listeners=[parse_listener(
        "EXT=SASL_PLAINTEXT://127.0.0.1:1")])
    auth = authentication_for(extra, None, str(tmp_path / "b"), env)
    assert auth.credentials.verify_plain("admin", "pw") and not hasattr(auth, "authorizer")
    CredentialStore(str(tmp_path / "b")).set_password("carol", "c")  # another process, e.g. python -m security
    auth.reread()
    assert auth.credentials.verify_plain("carol", "c")


CHECKS = [(test_a_scram_user_creates_a_topic_produces_and_consumes, ()),
          *[(test_a_wrong_password_or_unknown_user_fails_authentication, a)
            for a in ((ALICE, "wrong"), ("mallory", "whatever"))],
          (test_acl_apis_answer_security_disabled, ()),
          (test_any_user_adds_a_scram_user_who_then_logs_in, ())]


def main() -> int:
    """The checks above against Kafka 4.3.1 (bench/jars/kafka) with SASL_SSL and no authorizer."""
    from tests.security.validate_against_kafka import start_kafka
    work = tempfile.mkdtemp(prefix="kafka-sasl-no-acl-")
    certs = make_certs(os.path.join(work, "certs"))
    proc, port = start_kafka(work, certs, authorizer=False)
    failed = 0
    try:
        broker = types.SimpleNamespace(kafka_bootstrap=f"127.0.0.1:{port}", certs=certs)
        for fn, args in CHECKS:
            try:
                fn(broker, *args)
                print("PASS", fn.__name__, *args)
            except (Exception, pytest.fail.Exception) as exc:  # noqa: BLE001 - report every check
                failed += 1
                print("FAIL", fn.__name__, *args, repr(exc)[:800])
    finally:
        proc.terminate()
        proc.wait(60)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
