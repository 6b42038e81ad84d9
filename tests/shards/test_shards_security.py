"""Users, access keys and ACLs are one set for every shard of `--shards 2 --authorizer acl` (real
processes; gateway.cluster.shared_security mirrors each shard's files through the shards' etcd): a
key made before the start in a one-process data dir (moved into shard 0) signs requests on both
shards, and a user and its permission added live through shard 1's dir (`python -m security`)
send through shard 0's broker too. Before, each shard kept its own files: shard 1 knew no root and
shard 0 never learned of bob."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from client import Admin, Message, MessageQueue, Producer
from gateway_process import ROOT
from sharded import Sharded, require_etcd, wait_for

TOPIC = "sec-orders"


def _security(data_dir: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "security", "--data-dir", data_dir, *args], cwd=ROOT, check=True,
                   capture_output=True, timeout=60)


@pytest.fixture
def secured(tmp_path):
    require_etcd()
    gw = Sharded(str(tmp_path), extra_args=["--authorizer", "acl", "--super-users", "User:root"])
    _security(gw.data_dir, "access-key", "set", "AK-root", "--secret", "SK-root", "--user", "root")
    try:
        yield gw.start()
    finally:
        gw.stop()


def _sent_to_each_broker(gw: Sharded, access_key: str, secret: str) -> bool:
    """Whether a send signed by this key succeeds on queue 0 of both brokers (one per shard)."""
    try:
        with Producer("sec-pg", gw.namesrv, access_key=access_key, secret_key=secret) as p:
            for broker in ("broker-1", "broker-2"):
                p.send(Message(TOPIC, broker.encode()), queue=MessageQueue(TOPIC, broker, 0))
        return True
    except Exception:  # noqa: BLE001 - refused (unknown key, no permission) until the change arrives
        return False


def _created(gw: Sharded) -> bool:
    """Whether root created the topic (on every broker: both must know root, and be listening)."""
    admin = Admin(gw.namesrv, access_key="AK-root", secret_key="SK-root").start()
    try:
        admin.create_topic(TOPIC, 2)  # one queue led by each shard
        return True
    except Exception:  # noqa: BLE001 - a shard in Metadata may not listen yet; an unknown key is refused
        return False
    finally:
        admin.shutdown()


def test_one_set_of_users_and_acls_for_every_shard(secured):
    assert wait_for(lambda: _created(secured), 30, "root's topic on both shards")
    assert wait_for(lambda: _sent_to_each_broker(secured, "AK-root", "SK-root"), 30, "root's sends on both shards")
    shard_1 = os.path.join(secured.data_dir, "shard-1")  # a live change: shard 1 holds its dir
    _security(shard_1, "access-key", "set", "AK-bob", "--secret", "SK-bob", "--user", "bob")
    _security(shard_1, "rocketmq", "grant", "bob", "topic", TOPIC, "PUB")
    assert wait_for(lambda: _sent_to_each_broker(secured, "AK-bob", "SK-bob"), 30, "bob's sends on both shards")
