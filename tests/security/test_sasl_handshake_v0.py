"""SaslHandshake v0 (what Kafka clients before 1.0 send): after the handshake the SASL tokens travel bare,
size-prefixed without a request header (no SaslAuthenticate), the server's answers likewise; once
authenticated the connection carries ordinary requests, and a wrong password closes it. Raw sockets on
a SASL_PLAINTEXT listener with PLAIN (user alice). Run first against Kafka 4.3.1: point
KAFKA_SASL_PLAINTEXT_BOOTSTRAP=host:port at a SASL_PLAINTEXT listener with PLAIN and alice/alice-secret
(sasl.enabled.mechanisms=PLAIN, listener.name.sasl_plaintext.plain.sasl.jaas.config=...PlainLoginModule
required user_alice="alice-secret";), then the gateway."""
from __future__ import annotations

import os
import struct

import pytest

from security.credentials import CredentialStore
from tests.gateway_process import GatewayProcess
from tests.kafka.kafka_raw import RawClient
from tests.security.kafka_gateway import ALICE, ALICE_PW

REFERENCE = os.environ.get("KAFKA_SASL_PLAINTEXT_BOOTSTRAP")
SASL_HANDSHAKE, METADATA, API_VERSIONS = 17, 3, 18


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    if REFERENCE:
        yield REFERENCE
        return
    data = str(tmp_path_factory.mktemp("sasl-v0") / "data")
    CredentialStore(os.path.join(data, "config")).set_password(ALICE, ALICE_PW)
    g = GatewayProcess(data, extra_args=["--kafka-security-protocol", "SASL_PLAINTEXT"]).start()
    yield g.kafka_bootstrap
    g.stop()


def _connect(bootstrap: str) -> RawClient:
    return RawClient(bootstrap, timeout=20)


def _token(client: RawClient, data: bytes) -> bytes:
    """Send one bare SASL token; the server's bare answer."""
    client.send_raw(struct.pack(">i", len(data)) + data)
    return client.recv_frame()


def test_v0_handshake_then_bare_plain_token(bootstrap):
    s = _connect(bootstrap)
    hs = s.call(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    assert hs["error_code"] == 0 and "PLAIN" in hs["mechanisms"]
    assert _token(s, f"\0{ALICE}\0{ALICE_PW}".encode()) == b""  # PLAIN: an empty server token
    md = s.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert md["brokers"]  # authenticated: ordinary requests follow
    s.close()


def test_v0_wrong_password_closes(bootstrap):
    s = _connect(bootstrap)
    assert s.call(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})["error_code"] == 0
    with pytest.raises((ConnectionError, OSError)):
        _token(s, f"\0{ALICE}\0wrong".encode())
        s.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    s.close()


def test_v1_still_uses_sasl_authenticate(bootstrap):
    s = _connect(bootstrap)
    assert s.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    auth = s.call(36, 2, {"auth_bytes": f"\0{ALICE}\0{ALICE_PW}".encode()})
    assert auth["error_code"] == 0
    assert s.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})["brokers"]
    s.close()
