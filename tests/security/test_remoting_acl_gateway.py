"""RocketMQ ACL on a real gateway process (`--authorizer acl`) with the native client signing its
requests: allowed, denied, wrong secret, unknown key, no credentials, admin operations, the
bootstrap admin from ROCKETGATE_ADMIN_PASSWORD, and ACL changes made by `python -m security` while
the gateway runs. (The failure cases come last: every failure from 127.0.0.1 spends one of the
address's 20 authentication-failure tokens.)"""
import os
import subprocess
import sys
import threading
import time

import pytest

from client import Admin, ConsumeFrom, ConsumeStatus, Message, MQBrokerError, Producer, PushConsumer
from gateway_process import ROOT, GatewayProcess
from security import rocketmq_perms
from security.acl import Authorizer
from security.credentials import CredentialStore

NO_PERMISSION = 16


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    data = str(tmp_path_factory.mktemp("acl-gw") / "data")
    config = os.path.join(data, "config")
    os.environ["ROCKETGATE_ADMIN_PASSWORD"] = "admin-secret"
    try:
        g = GatewayProcess(data, extra_args=["--authorizer", "acl", "--super-users", "User:admin"]).start()
    finally:
        del os.environ["ROCKETGATE_ADMIN_PASSWORD"]
    admin = Admin(g.namesrv, access_key="admin", secret_key="admin-secret").start()
    admin.create_topic("acl-orders", queues=2)
    admin.shutdown()
    creds, acls = CredentialStore(config), Authorizer(config)
    creds.set_access_key("AK-alice", "SK-alice", user="alice")
    rocketmq_perms.grant(acls, "alice", "topic", "acl-orders", "PUB|SUB")
    rocketmq_perms.grant(acls, "alice", "group", "acl-cg", "SUB")
    time.sleep(1.2)  # the gateway re-reads changed files within a second
    yield g
    g.stop()


def _producer(gw, ak="AK-alice", sk="SK-alice"):
    return Producer("acl-pg", gw.namesrv, access_key=ak, secret_key=sk).start()


def test_allowed_produce_and_consume(gw):
    p = _producer(gw)
    try:
        sent = {p.send(Message("acl-orders", f"m{i}".encode())).msg_id for i in range(5)}
    finally:
        p.shutdown()
    got, lock = [], threading.Lock()

    def listener(msgs):
        with lock:
            got.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS
    c = PushConsumer("acl-cg", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, access_key="AK-alice",
                     secret_key="SK-alice")
    c.subscribe("acl-orders")
    c.register_listener(listener)
    c.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(got) < 5:
            time.sleep(0.1)
    finally:
        c.shutdown()
    assert sorted(m.body for m in got) == [f"m{i}".encode() for i in range(5)]
    assert {m.msg_id for m in got} == sent


def test_admin_operations_only_for_admins(gw):
    alice = Admin(gw.namesrv, access_key="AK-alice", secret_key="SK-alice").start()
    try:
        with pytest.raises(MQBrokerError) as info:
            alice.create_topic("acl-new")
        assert info.value.code == NO_PERMISSION
        assert "User:alice has no permission to access Cluster:kafka-cluster" in info.value.remark
    finally:
        alice.shutdown()
    root = Admin(gw.namesrv, access_key="admin", secret_key="admin-secret").start()
    try:
        root.create_topic("acl-new")
        assert "acl-new" in root.list_topics()
    finally:
        root.shutdown()


def test_grant_by_the_tool_while_running(gw):
    p = _producer(gw)
    try:
        with pytest.raises(MQBrokerError) as info:
            p.send(Message("acl-later", b"x"))
        assert info.value.code == NO_PERMISSION
        subprocess.run([sys.executable, "-m", "security", "--data-dir", gw.data_dir, "rocketmq", "grant", "alice",
                        "topic", "acl-later", "PUB"], cwd=ROOT, check=True, capture_output=True)
        deadline = time.monotonic() + 10
        while True:
            try:
                p.send(Message("acl-later", b"x"))
                break
            except MQBrokerError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        p.shutdown()


@pytest.mark.parametrize("ak, sk, topic, remark", [
    ("AK-alice", "SK-alice", "acl-other",
     "User:alice has no permission to access Topic:acl-other from 127.0.0.1, no matched policies."),
    ("AK-alice", "wrong", "acl-orders", "check signature failed."),
    ("AK-nobody", "SK-alice", "acl-orders", "User:AK-nobody is not found."),
    (None, None, "acl-orders", "username cannot be null."),
])
def test_refused_sends(gw, ak, sk, topic, remark):
    p = _producer(gw, ak, sk)
    try:
        with pytest.raises(MQBrokerError) as info:
            p.send(Message(topic, b"x"))
    finally:
        p.shutdown()
    assert info.value.code == NO_PERMISSION and info.value.remark == remark
