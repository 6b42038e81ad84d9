"""The admin command (`python -m gateway.admin`) against a secured gateway: a SASL_SSL Kafka listener,
a TLS-only remoting port, `--authorizer acl`. Credentials come from the options and the environment
(docs/admin.md, "A secured gateway"); without them, or with a user's who may not, the gateway refuses."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from codec.remoting.message import make_msg_id
from security.credentials import CredentialStore
from tests.gateway_process import ROOT, GatewayProcess, free_port
from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ADMIN, ADMIN_PW, ALICE, ALICE_PW


def _secured_gateway(base: str):
    keys = CredentialStore(os.path.join(base, "data", "config"))
    keys.set_access_key("AK-admin", "SK-admin", user=ADMIN)
    keys.set_access_key("AK-alice", "SK-alice", user=ALICE)
    return kg.start(base, ["--remoting-tls"])


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = _secured_gateway(str(tmp_path_factory.mktemp("admin-secured")))
    yield g
    g.stop()


@pytest.fixture
def fresh_gw(tmp_path):
    """A gateway of its own: authentication failures of every protocol share one per-address budget
    (20, refilled 1 a second), and the Kafka tests' failures could use it up first on a fast machine."""
    g = _secured_gateway(str(tmp_path))
    yield g
    g.stop()


def admin(gw, *args, env: dict | None = None, kafka_tls: bool = True) -> subprocess.CompletedProcess:
    endpoints = ["--bootstrap", gw.kafka_bootstrap, "--remoting", gw.namesrv]
    if kafka_tls:
        endpoints += ["--tls-ca", gw.certs.ca]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETGATE_")}
    return subprocess.run([sys.executable, "-m", "gateway.admin", *endpoints, *args], cwd=ROOT,
                          env={**clean, **(env or {})}, capture_output=True, text=True, timeout=90)


def as_user(user: str, password: str) -> dict:
    return {"ROCKETGATE_SASL_USERNAME": user, "ROCKETGATE_SASL_PASSWORD": password}


def error(done: subprocess.CompletedProcess, code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.startswith("rocketgate: error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_kafka_commands_with_sasl_credentials(gw):
    env = as_user(ADMIN, ADMIN_PW)
    done = admin(gw, "--json", "topics", "create", "sec-t", "--partitions", "2", env=env)
    assert done.returncode == 0, done.stderr
    listed = admin(gw, "--json", "topics", "list", env=env)
    assert {"topic": "sec-t", "partitions": 2} in json.loads(listed.stdout)
    # the password as a flag works too, and SCRAM-SHA-512 / PLAIN as mechanisms
    for mechanism in ("SCRAM-SHA-512", "PLAIN"):
        done = admin(gw, "--json", "--sasl-mechanism", mechanism, "--sasl-username", ADMIN, "--sasl-password",
                     ADMIN_PW, "topics", "describe", "sec-t")
        assert [r["partition"] for r in json.loads(done.stdout)] == [0, 1], done.stderr
    reset = admin(gw, "--json", "offsets", "reset", "sec-g", "sec-t", "--to", "earliest", env=env)
    assert [r["offset"] for r in json.loads(reset.stdout)] == [0, 0], reset.stderr
    assert admin(gw, "topics", "delete", "sec-t", env=env).returncode == 0


def test_kafka_commands_refused_without_or_with_weak_credentials(gw):
    assert "needs --sasl-username and --sasl-password" in error(
        admin(gw, "--security-protocol", "SASL_SSL", "topics", "list"), 2)
    wrong = error(admin(gw, "topics", "list", env=as_user(ADMIN, "wrong")), 1)
    assert "Authentication failed during authentication due to invalid credentials" in wrong
    # TLS without SASL on the SASL_SSL listener: the gateway closes the connection; the command says
    # what to pass instead of librdkafka's "Broker transport failure"
    assert "requires SASL authentication (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512): pass --sasl-username and " \
           "--sasl-password (or ROCKETGATE_SASL_USERNAME and ROCKETGATE_SASL_PASSWORD)" in error(
               admin(gw, "topics", "list"), 2)
    refused = error(admin(gw, "topics", "create", "alice-t", env=as_user(ALICE, ALICE_PW)), 1)
    assert "cannot create topic 'alice-t'" in refused and "authoriz" in refused.lower()


def test_remoting_command_signed_over_tls(fresh_gw):
    gw = fresh_gw
    host, port = gw.namesrv.split(":")
    msg_id = make_msg_id(host, int(port), 0)  # a CommitLog offset, not a dead letter
    resend = ["--remoting-tls", "dlq", "resend", "g", "--msg-id", msg_id]
    assert "username cannot be null." in error(admin(gw, *resend), 1)
    alice = {"ROCKETGATE_ACCESS_KEY": "AK-alice", "ROCKETGATE_SECRET_KEY": "SK-alice"}
    assert "User:alice has no permission to access Cluster:kafka-cluster" in error(admin(gw, *resend, env=alice), 1)
    assert "check signature failed." in error(
        admin(gw, "--access-key", "AK-admin", "--secret-key", "not-the-secret", *resend), 1)
    # the admin's key passes authentication and authorization: the gateway's own answer remains
    signed = admin(gw, "--access-key", "AK-admin", *resend, env={"ROCKETGATE_SECRET_KEY": "SK-admin"})
    assert "not a dead letter with a known original topic" in error(signed, 1)
    # a plaintext request to the TLS-only remoting port: the handshake fails, the gateway closes
    assert "closed the connection (a TLS-only listener needs --remoting-tls)" in error(
        admin(gw, *resend[1:], env=alice), 3)
    assert "--access-key and --secret-key go together" in error(admin(gw, "--access-key", "AK-admin", *resend), 2)


def test_a_sasl_plaintext_listener_asks_for_credentials(tmp_path):
    """Refused by a SASL listener for want of credentials, every Kafka command says to pass them; an
    unreachable listener stays "unreachable" (exit 3), credentials given make it work."""
    CredentialStore(str(tmp_path / "data" / "config")).set_password(ADMIN, ADMIN_PW)
    gw = GatewayProcess(str(tmp_path / "data"), extra_args=["--kafka-security-protocol", "SASL_PLAINTEXT"]).start()
    try:
        for command in (["topics", "list"], ["topics", "create", "t1"], ["topics", "describe", "t1"]):
            refused = error(admin(gw, *command, kafka_tls=False), 2)
            assert f"the Kafka listener at {gw.kafka_bootstrap} requires SASL authentication" in refused
            assert "--sasl-username and --sasl-password" in refused and "transport failure" not in refused
        created = admin(gw, "topics", "create", "t1", kafka_tls=False, env=as_user(ADMIN, ADMIN_PW))
        assert created.returncode == 0, created.stderr
    finally:
        gw.stop()
    closed = subprocess.run([sys.executable, "-m", "gateway.admin", "--bootstrap", f"127.0.0.1:{free_port()}",
                             "topics", "list"], cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert closed.returncode == 3 and "Broker transport failure" in closed.stderr
