"""Delegation tokens (KIP-48) through the stock Java AdminClient, producer and consumer (kafka-clients
4.3.1, compat/java/src/kafkatoken TokenCheck), first against Apache Kafka 4.3.1 on a SASL_PLAINTEXT/SCRAM
listener with StandardAuthorizer and delegation.token.secret.key, then the gateway (--authorizer acl,
--delegation-token-secret-key-file): create with renewers, produce and consume logged in with the token
(SCRAM, tokenauth=true), a token login may not create or describe tokens, renew by a renewer/owner and
not by others, CREATE_TOKENS for another owner, describe per principal, expire, and the token refused
after. Then, on the gateway, a token survives a restart; and raw requests for the refusals Kafka gives
on a PLAINTEXT listener and without a secret key.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest

from bench.brokers import KafkaBroker
from compat.jvm import JAVA_DIR
from security.credentials import CredentialStore
from tests.gateway_process import GatewayProcess, free_port
from tests.kafka.kafka_java import KAFKA_JARS, compile_against_kafka
from tests.kafka.kafka_raw import RawClient

pytestmark = pytest.mark.timeout(400)

CHECK = os.path.join(JAVA_DIR, "src", "kafkatoken", "compat", "TokenCheck.java")
USERS = ("admin", "alice", "bob", "carol")
SECRET = "token-secret-key-for-tests"
EXPECTED = {
    "owner": "User:alice",
    "requester": "User:alice",
    "renewers": "[User:bob]",
    "expiry_is_a_day": "true",
    "max_is_a_week": "true",
    "token_produce": "ok",
    "token_consume": "by-token",
    "token_creates_token": "UnsupportedByAuthenticationException",
    "token_describes_tokens": "UnsupportedByAuthenticationException",
    "renew_by_renewer_hour": "true",
    "renew_by_owner": "ok",
    "renew_by_other": "DelegationTokenOwnerMismatchException",
    "expire_by_other": "DelegationTokenOwnerMismatchException",
    "renew_unknown": "DelegationTokenNotFoundException",
    "renewer_not_user": "InvalidPrincipalTypeException",
    "carol_for_alice": "DelegationTokenAuthorizationException",
    "admin_for_alice": "User:alice by User:admin",
    "describe_alice": "2",
    "describe_bob": "1",
    "describe_carol": "0",
    "describe_admin": "2",
    "describe_admin_bob": "1",
    "login_before_expire": "ok",
    "login_wrong_hmac": "SaslAuthenticationException",
    "expire_by_owner": "ok",
    "login_after_expire": "SaslAuthenticationException",
    "renew_after_expire": "DelegationTokenNotFoundException",
}


@pytest.fixture(scope="module")
def check_classes(tmp_path_factory):
    return compile_against_kafka(CHECK, str(tmp_path_factory.mktemp("token-check")))


def _kafka(work: str) -> KafkaBroker:
    broker = KafkaBroker(work, format_args=[a for u in USERS for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                                            for a in ("--add-scram", f"{m}=[name={u},password={u}-secret]")])
    broker.sasl_port = free_port()
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    broker.extra = {
        "listeners": f"PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{broker.sasl_port},"
                     f"CONTROLLER://127.0.0.1:{broker.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{broker.sasl_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": scram,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": scram,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",  # ANONYMOUS: the PLAINTEXT listener (readiness, tests)
        "delegation.token.secret.key": SECRET,
    }
    return broker


def _gateway(base: str, secret: bool = True) -> GatewayProcess:
    data = os.path.join(base, "data")
    store = CredentialStore(os.path.join(data, "config"))
    for user in USERS:
        store.set_password(user, f"{user}-secret")
    key = os.path.join(base, "token.key")
    with open(key, "w") as f:
        f.write(SECRET)
    gw = GatewayProcess(data, extra_args=[
        "--kafka-security-protocol", "SASL_PLAINTEXT", "--authorizer", "acl", "--super-users", "User:admin",
        "--listener", f"LOCAL=PLAINTEXT://127.0.0.1:{free_port()}",
        *(["--delegation-token-secret-key-file", key] if secret else [])])
    return gw


@pytest.fixture(scope="module", params=["kafka", "gateway"])
def target(request, tmp_path_factory):
    """(SASL bootstrap, PLAINTEXT bootstrap, the process)."""
    base = str(tmp_path_factory.mktemp(request.param))
    system = _kafka(base) if request.param == "kafka" else _gateway(base)
    try:
        system.start()
        if request.param == "kafka":
            yield f"127.0.0.1:{system.sasl_port}", system.bootstrap, system
        else:
            plain = [a for a in system.extra_args if a.startswith("LOCAL=")][0].rsplit("/", 1)[1]
            yield system.kafka_bootstrap, plain, system
    finally:
        system.stop()


def _java(classes: str, *args: str) -> dict:
    run = subprocess.run([shutil.which("java"), "-cp", os.pathsep.join([classes, os.path.join(KAFKA_JARS, "*")]),
                          "compat.TokenCheck", *args], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)


def test_java_delegation_tokens(check_classes, target):
    facts = _java(check_classes, target[0], "tokens-" + uuid.uuid4().hex[:6])
    assert {k: facts.get(k) for k in EXPECTED} == EXPECTED


@pytest.mark.parametrize("key,version", [(38, 3), (39, 2), (40, 2), (41, 3)])
def test_plaintext_listener_refuses_token_requests(target, key, version):
    """Kafka's allowTokenRequests: no token API over a listener without SASL (64)."""
    body = {38: {"owner_principal_type": None, "owner_principal_name": None, "renewers": [], "max_lifetime_ms": -1},
            39: {"hmac": b"x", "renew_period_ms": -1}, 40: {"hmac": b"x", "expiry_time_period_ms": -1},
            41: {"owners": None}}[key]
    client = RawClient(target[1], timeout=30)
    try:
        answer = client.call(key, version, body)
    finally:
        client.close()
    assert answer["error_code"] == 64
    if key == 38:
        assert (answer["principal_name"], answer["token_id"], answer["hmac"]) == ("ANONYMOUS", "", b"")
        assert answer["issue_timestamp_ms"] == answer["expiry_timestamp_ms"] == answer["max_timestamp_ms"] == -1
    elif key in (39, 40):
        assert answer["expiry_timestamp_ms"] == -1
    else:
        assert answer["tokens"] == []


def test_token_survives_restart(check_classes, tmp_path):
    gw = _gateway(str(tmp_path))
    try:
        gw.start()
        token = _java(check_classes, gw.kafka_bootstrap, "create", "alice")
        gw.restart()
        assert _java(check_classes, gw.kafka_bootstrap, "login", token["token_id"], token["hmac"]) == {"login": "ok"}
    finally:
        gw.stop()


def test_without_secret_key_tokens_are_disabled(check_classes, tmp_path):
    """No --delegation-token-secret-key-file (Kafka: no delegation.token.secret.key): DELEGATION_TOKEN_AUTH_DISABLED."""
    gw = _gateway(str(tmp_path), secret=False)
    try:
        gw.start()
        run = subprocess.run([shutil.which("java"), "-cp", os.pathsep.join([check_classes, os.path.join(KAFKA_JARS, "*")]),
                              "compat.TokenCheck", gw.kafka_bootstrap, "create", "alice"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode != 0 and "DelegationTokenDisabledException" in run.stderr
    finally:
        gw.stop()
