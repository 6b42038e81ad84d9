"""Signed gRPC calls (`--authorizer acl`, gateway.grpc.auth) with the stock Python SDK: the right
AccessKey/SecretKey (the remoting ACL's table) sends and receives on what its user may use; a topic
it may not use, a wrong secret, an unknown key and no credentials are refused with the proxy's
UNAUTHORIZED status and message. (Failures come last: each spends one of the address's
authentication-failure tokens.) With GRPC_TARGET=proxy the same tests run against Apache RocketMQ's
own proxy with ACL 2.0 on (bench/grpc_proxy.py, compat/validate_acl.py's settings)."""
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

AK, SK = "alice", "SK-alice"  # in RocketMQ 5 ACL 2.0 the access key is the user name
TOPIC, GROUP = "ga-orders", "ga-g"


def _real_proxy(base: str):
    """Apache RocketMQ's proxy with authentication and authorization on, alice set up as below."""
    from bench.grpc_proxy import RealProxy
    from compat.validate_acl import BROKER_ACL, SUPER_SECRET, SUPER_USER, mqadmin_as
    proxy = RealProxy(base, auth=BROKER_ACL)
    try:
        proxy.start()
    except Exception:
        proxy.stop()
        raise
    ns, broker = f"127.0.0.1:{proxy.namesrv_port}", f"127.0.0.1:{proxy.broker_port}"
    for args in (["createUser", "-b", broker, "-u", AK, "-p", SK],
                 ["createAcl", "-b", broker, "-s", "User:alice", "-r", f"Topic:{TOPIC}", "-a", "Pub,Sub", "-d",
                  "Allow"],
                 ["createAcl", "-b", broker, "-s", "User:alice", "-r", f"Group:{GROUP}", "-a", "Sub", "-d", "Allow"],
                 ["updateTopic", "-b", broker, "-t", TOPIC, "-a", "+message.type=NORMAL"],
                 ["updateSubGroup", "-b", broker, "-g", GROUP]):
        r = mqadmin_as(SUPER_USER, SUPER_SECRET, [args[0], "-n", ns, *args[1:]], base)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    time.sleep(10)  # the broker registers the new topic with the name server a little later
    return proxy


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    if os.environ.get("GRPC_TARGET") == "proxy":
        proxy = _real_proxy(str(tmp_path_factory.mktemp("grpc-auth-proxy")))
        yield proxy
        proxy.stop()
        return
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
