"""The stock Java rocketmq-client (4.9.x and 5.x) with AclClientRPCHook against a gateway started with
`--authorizer acl`: signed sends and consumption allowed by the ACLs, and the error code and remark
the Java client reports for a denied topic, a wrong secret, an unknown key and no credentials;
mqadmin (rocketmq-tools 5.x) with credentials from $ROCKETMQ_HOME/conf/tools.yml.

The remarks are Apache RocketMQ 5.x's (ACL 2.0: AuthenticationPipeline / AclAuthorizationHandler
answer NO_PERMISSION with these texts); the Java producer retries a NO_PERMISSION send and then
throws MQClientException with that response code, the broker's MQBrokerException as its cause.
"""
import os

import pytest

from compat.harness import run_on_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from compat.tools import mqadmin
from security import rocketmq_perms
from security.acl import Authorizer
from security.credentials import CredentialStore

pytestmark = pytest.mark.timeout(600)
NO_PERMISSION = 16
GATEWAY_ARGS = ["--authorizer", "acl", "--super-users", "User:admin"]
STEPS = ["ok_send:send:AK-alice:SK-alice:jacl-orders",
         "consume:consume:AK-alice:SK-alice:jacl-orders:jacl-cg:1",
         "denied:send:AK-alice:SK-alice:jacl-other",
         "wrong_secret:send:AK-alice:not-the-secret:jacl-orders",
         "unknown_key:send:AK-nobody:SK-alice:jacl-orders",
         "no_credentials:send:-:-:jacl-orders"]


def _users(gw):
    config = os.path.join(gw.data_dir, "config")
    creds, acls = CredentialStore(config), Authorizer(config)
    creds.set_access_key("admin", "admin-secret")
    creds.set_access_key("AK-alice", "SK-alice", user="alice")
    rocketmq_perms.grant(acls, "alice", "topic", "jacl-orders", "PUB|SUB")
    rocketmq_perms.grant(acls, "alice", "group", "jacl-cg", "SUB")


@pytest.fixture(scope="module", params=sorted(ROCKETMQ_CLIENTS))
def java_acl(request, tmp_path_factory):
    with run_on_gateway(tmp_path_factory.mktemp(f"java-acl-{request.param}"), ROCKETMQ_CLIENTS[request.param],
                        "compat.RocketAcl", lambda gw: [gw.namesrv, *STEPS], before=_users,
                        gateway_args=GATEWAY_ARGS) as results:
        results.version = request.param
        yield results


def test_signed_send_and_consume(java_acl):
    sent = java_acl["ok_send"]
    assert sent["sent"] and sent["status"] == "SEND_OK"
    assert java_acl["consume"]["bodies"] == ["ok_send"]


@pytest.mark.parametrize("step, remark", [
    ("denied", "User:alice has no permission to access Topic:jacl-other from 127.0.0.1, no matched policies."),
    ("wrong_secret", "check signature failed."),
    ("unknown_key", "User:AK-nobody is not found."),
    ("no_credentials", "username cannot be null."),
])
def test_refusals_as_the_java_client_reports_them(java_acl, step, remark):
    r = java_acl[step]
    assert not r["sent"], r
    assert r["code"] == NO_PERMISSION and r["remark"] == remark, r


def _mqadmin_as(java_acl, tmp_path, access_key, secret_key, *args):
    home = tmp_path / f"home-{access_key}"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "conf" / "tools.yml").write_text(f"accessKey: {access_key}\nsecretKey: {secret_key}\n")
    os.environ["ROCKETMQ_HOME"] = str(home)
    try:
        return mqadmin([args[0], "-n", java_acl.gw.namesrv, *args[1:]], str(tmp_path / "mqadmin"))
    finally:
        del os.environ["ROCKETMQ_HOME"]


def test_mqadmin_with_credentials(java_acl, tmp_path):
    if java_acl.version != "5":
        pytest.skip("mqadmin is rocketmq-tools 5.x; run once")
    ok = _mqadmin_as(java_acl, tmp_path, "admin", "admin-secret", "updateTopic", "-c", "DefaultCluster",
                     "-t", "jacl-admin-made")
    assert ok.returncode == 0 and "success" in ok.stdout.lower(), ok.stdout + ok.stderr
    denied = _mqadmin_as(java_acl, tmp_path, "AK-alice", "SK-alice", "updateTopic", "-c", "DefaultCluster",
                         "-t", "jacl-alice-made")
    out = denied.stdout + denied.stderr
    assert "CODE: 16" in out and "User:alice has no permission to access Cluster:kafka-cluster" in out, out
    listed = _mqadmin_as(java_acl, tmp_path, "admin", "admin-secret", "topicList")
    assert "jacl-admin-made" in listed.stdout and "jacl-alice-made" not in listed.stdout
