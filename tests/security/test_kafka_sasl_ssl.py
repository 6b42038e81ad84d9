"""librdkafka (confluent-kafka) and kafka-python over SASL_SSL against the gateway: right credentials
(SCRAM-SHA-256, SCRAM-SHA-512, PLAIN), wrong password, unknown user, no credentials, allowed and denied
topics and groups, with the exact error each client reports."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic
from confluent_kafka.admin import ResourcePatternType, ResourceType

from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ADMIN, ADMIN_PW, ALICE, ALICE_PW

SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = kg.start(str(tmp_path_factory.mktemp("sasl-ssl")))
    admin = AdminClient(kg.librdkafka(g, ADMIN, ADMIN_PW))
    for f in admin.create_topics([NewTopic("orders", 1), NewTopic("secret", 1)]).values():
        f.result(30)
    acls = [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, f"User:{ALICE}", "*", op,
                       AclPermissionType.ALLOW) for op in (AclOperation.READ, AclOperation.WRITE)]
    acls.append(AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED, f"User:{ALICE}", "*",
                           AclOperation.READ, AclPermissionType.ALLOW))
    for f in admin.create_acls(acls).values():
        f.result(30)
    yield g
    g.stop()


def produce(conf: dict, topic: str) -> list:
    """[(error code or None, error text)] of one message sent with `conf`: the client's first error
    (error_cb: authentication, transport) if it reports one, else the delivery report."""
    out, logged = [], []
    p = Producer({**conf, "message.timeout.ms": 8000, "error_cb": lambda e: logged.append(e)})
    p.produce(topic, b"value", callback=lambda err, _m: out.append((err and err.code(), err and err.str())))
    for _ in range(150):
        if out or logged:
            break
        p.poll(0.1)
    p.purge()
    p.flush(1)
    return [(e.code(), e.str()) for e in logged[:1]] or out


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_librdkafka_right_credentials_produce(gw, mechanism):
    assert produce(kg.librdkafka(gw, ALICE, ALICE_PW, mechanism), "orders") == [(None, None)]


@pytest.mark.parametrize("user,password", [(ALICE, "wrong"), ("mallory", "whatever")])
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_librdkafka_wrong_password_or_unknown_user(gw, user, password, mechanism):
    errors = produce(kg.librdkafka(gw, user, password, mechanism), "orders")
    code, text = errors[0]
    assert code == KafkaError._AUTHENTICATION
    expected = SCRAM_FAILED.format(mechanism) if mechanism != "PLAIN" else \
        "Authentication failed: Invalid username or password"
    assert f"SASL authentication error: {expected}" in text


def test_librdkafka_without_sasl_is_disconnected(gw):
    """A TLS client that does not authenticate: the gateway closes on its first other request."""
    conf = kg.librdkafka(gw, None, None)
    conf["security.protocol"] = "SSL"
    errors = produce(conf, "orders")
    assert errors and errors[0][0] in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._MSG_TIMED_OUT)


def test_librdkafka_denied_topic(gw):
    assert produce(kg.librdkafka(gw, ALICE, ALICE_PW), "secret") == [
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed")]


def consume_one(conf: dict, group: str, topic: str, wanted: bytes = b"value"):
    """`wanted` once a message with that value arrives, or the first error the consumer reports."""
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        for _ in range(20):
            m = c.poll(1)
            if m is not None and (m.error() or m.value() == wanted):
                return m.error() or m.value()
    finally:
        c.close()


def test_librdkafka_allowed_and_denied_groups(gw):
    conf = kg.librdkafka(gw, ALICE, ALICE_PW)
    assert produce(conf, "orders") == [(None, None)]
    assert consume_one(conf, "alice-1", "orders") == b"value"
    err = consume_one(conf, "other-group", "orders")
    assert err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, err
    assert "Group authorization failed." in err.str()


def test_metadata_lists_only_described_topics(gw):
    alice = AdminClient(kg.librdkafka(gw, ALICE, ALICE_PW)).list_topics(timeout=15).topics
    admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW)).list_topics(timeout=15).topics
    assert "orders" in alice and "secret" not in alice
    assert {"orders", "secret"} <= set(admin)


def test_acls_need_alter_on_the_cluster(gw):
    acl = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, f"User:{ALICE}", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    client = AdminClient(kg.librdkafka(gw, ALICE, ALICE_PW))
    fut = client.create_acls([acl])[acl]
    with pytest.raises(KafkaException) as info:
        fut.result(15)
    assert info.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_kafka_python_matrix(gw, caplog):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError as PyKafkaError
    from kafka.errors import KafkaTimeoutError, TopicAuthorizationFailedError

    p = KafkaProducer(**kg.kafka_python(gw, ALICE, ALICE_PW, "SCRAM-SHA-512"))
    assert p.send("orders", b"from-kafka-python").get(timeout=20).topic == "orders"
    with pytest.raises(TopicAuthorizationFailedError):
        p.send("secret", b"x").get(timeout=20)
    p.close()
    for user, pw in ((ALICE, "wrong"), ("mallory", "x")):
        # kafka-python 3 logs the broker's answer and keeps retrying until its bootstrap timeout
        caplog.clear()
        with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
            KafkaProducer(**kg.kafka_python(gw, user, pw, bootstrap_timeout_ms=3000))
        assert ("SaslAuthenticationFailedError: Authentication failed during authentication due to invalid "
                "credentials with SASL mechanism SCRAM-SHA-256") in caplog.text
    c = KafkaConsumer("orders", group_id="alice-py", auto_offset_reset="earliest", consumer_timeout_ms=15000,
                      **kg.kafka_python(gw, ALICE, ALICE_PW, "PLAIN"))
    assert any(m.value == b"from-kafka-python" for m in c)
    c.close()
    denied = KafkaConsumer("orders", group_id="not-alice", auto_offset_reset="earliest",
                           **kg.kafka_python(gw, ALICE, ALICE_PW))
    with pytest.raises(PyKafkaError) as info:
        denied.poll(timeout_ms=15000)
        denied.poll(timeout_ms=5000)
    assert type(info.value).__name__ == "GroupAuthorizationFailedError", info.value
    denied.close()


def test_plaintext_loopback_listener_is_anonymous(gw):
    """The LOCAL listener serves without authentication, as User:ANONYMOUS: ACLs still apply."""
    conf = {"bootstrap.servers": f"127.0.0.1:{gw.plain_port}"}
    assert produce(conf, "orders") == [(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Broker: Topic authorization failed")]


def _error_code(fut) -> int | None:
    try:
        fut.result(20)
    except KafkaException as exc:
        return exc.args[0].code()
    return None


def test_admin_apis_as_a_user_without_rights(gw):
    """CreateTopics, DeleteTopics, DescribeConfigs, DeleteGroups, DescribeGroups, ListGroups as alice
    (who may only read/write `orders` and read groups `alice-*`)."""
    from confluent_kafka.admin import ConfigResource

    admin = AdminClient(kg.librdkafka(gw, ADMIN, ADMIN_PW))
    alice = AdminClient(kg.librdkafka(gw, ALICE, ALICE_PW))
    assert produce(kg.librdkafka(gw, ALICE, ALICE_PW), "orders") == [(None, None)]
    assert consume_one(kg.librdkafka(gw, ALICE, ALICE_PW), "alice-admin", "orders") == b"value"
    assert consume_one(kg.librdkafka(gw, ADMIN, ADMIN_PW), "admins-only", "orders") == b"value"

    assert _error_code(alice.create_topics([NewTopic("alice-new", 1)])["alice-new"]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _error_code(alice.delete_topics(["secret"])["secret"]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    res = ConfigResource(ConfigResource.Type.TOPIC, "secret")
    assert _error_code(alice.describe_configs([res])[res]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _error_code(alice.delete_consumer_groups(["admins-only"])["admins-only"]) == \
        KafkaError.GROUP_AUTHORIZATION_FAILED
    assert _error_code(alice.describe_consumer_groups(["admins-only"])["admins-only"]) == \
        KafkaError.GROUP_AUTHORIZATION_FAILED
    listed = {g.group_id for g in alice.list_consumer_groups().result(20).valid}
    assert "alice-admin" in listed and "admins-only" not in listed
    assert "admins-only" in {g.group_id for g in admin.list_consumer_groups().result(20).valid}


def test_transactional_and_idempotent_producers(gw):
    """Idempotence needs WRITE on some topic (alice has it); a transactional id needs WRITE on it."""
    conf = kg.librdkafka(gw, ALICE, ALICE_PW)
    assert produce({**conf, "enable.idempotence": True}, "orders") == [(None, None)]
    p = Producer({**conf, "transactional.id": "alice-tx"})
    with pytest.raises(KafkaException) as info:
        p.init_transactions(20)
    assert info.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_kip848_consumer_groups(gw):
    """group.protocol=consumer (ConsumerGroupHeartbeat): READ on the group, as for classic groups."""
    conf = {**kg.librdkafka(gw, ALICE, ALICE_PW), "group.protocol": "consumer"}
    assert produce(kg.librdkafka(gw, ALICE, ALICE_PW), "orders") == [(None, None)]
    assert consume_one(conf, "alice-848", "orders") == b"value"
    err = consume_one(conf, "other-848", "orders")
    assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, err
