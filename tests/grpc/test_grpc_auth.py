"""Signed gRPC calls (`--authorizer acl`, gateway.grpc.auth) with the stock Python SDK: the right
AccessKey/SecretKey (the remoting ACL's table) sends and receives on what its user may use; a topic
it may not use, a wrong secret, an unknown key and no credentials are refused with the proxy's
UNAUTHORIZED status and message. (Failures come last: each spends one of the address's
authentication-failure tokens.)"""
from __future__ import annotations

import logging
import os
import time

import pytest

from grpc_sdk import GrpcGateway, message, receive_all
from security import rocketmq_perms
from security.acl import Authorizer
from security.credentials import CredentialStore

rocketmq = pytest.importorskip("rocketmq")
pytestmark = pytest.mark.timeout(300)
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Producer, SimpleConsumer  # noqa: E402

AK, SK = "AK-alice", "SK-alice"
TOPIC, GROUP = "ga-orders", "ga-g"


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    data = str(tmp_path_factory.mktemp("grpc-auth") / "data")
    config = os.path.join(data, "config")
    creds, acls = CredentialStore(config), Authorizer(config)
    creds.set_access_key(AK, SK, user="alice")
    creds.set_access_key("AK-root", "SK-root", user="root")
    rocketmq_perms.grant(acls, "alice", "topic", TOPIC, "PUB|SUB")
    rocketmq_perms.grant(acls, "alice", "group", GROUP, "SUB")
    g = GrpcGateway(data, ["--authorizer", "acl", "--super-users", "User:root"]).start()
    yield g
    g.stop()


def _config(gw, ak: str = AK, sk: str = SK) -> ClientConfiguration:
    return ClientConfiguration(gw.endpoints, Credentials(ak, sk), request_timeout=5)


def _refusal(gw, caplog, topic: str = TOPIC, ak: str = AK, sk: str = SK) -> str:
    """The errors of starting a producer and sending one message with these credentials: what the
    SDK raises and logs (it logs the status code and message, and raises "failed to fetch topic")."""
    caplog.set_level(logging.ERROR, logger="rocketmq-python-client")
    caplog.clear()
    p = Producer(_config(gw, ak, sk), (topic,))
    try:
        p.startup()
        p.send(message(topic, b"x"))
    except Exception as exc:  # noqa: BLE001 - the SDK's exception types vary by call
        return f"{type(exc).__name__}: {exc}\n{caplog.text}"
    finally:
        try:
            p.shutdown()
        except Exception:  # noqa: BLE001
            pass
    return ""


def test_signed_send_and_receive(gw):
    p = Producer(_config(gw), (TOPIC,))
    p.startup()
    c = SimpleConsumer(_config(gw), GROUP, {TOPIC: FilterExpression("*")}, await_duration=2)
    c.startup()
    try:
        for i in range(3):
            p.send(message(TOPIC, f"m{i}".encode()))
        got = receive_all(c, 3)
        assert sorted(m.body for m in got) == [b"m0", b"m1", b"m2"]
    finally:
        c.shutdown()
        p.shutdown()


def test_topic_without_permission(gw, caplog):
    out = _refusal(gw, caplog, topic="ga-other")
    assert "failed to fetch topic:ga-other route." in out, out
    assert ("query topic raise exception, 40100, User:alice has no permission to access Topic:ga-other from "
            "127.0.0.1, no matched policies.") in out, out


@pytest.mark.parametrize("ak, sk, expected", [
    (AK, "wrong", "check signature failed."),
    ("AK-nobody", "x", "User:AK-nobody is not found."),
    ("", "", "username cannot be null."),
])
def test_refused_credentials(gw, caplog, ak, sk, expected):
    time.sleep(1)  # one authentication-failure token comes back per second
    out = _refusal(gw, caplog, ak=ak, sk=sk)
    assert f"query topic raise exception, 40100, {expected}" in out, out
