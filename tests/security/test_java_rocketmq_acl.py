"""The stock Java rocketmq-client (4.9.x and 5.x) with AclClientRPCHook against a gateway started with
`--authorizer acl`: signed sends and consumption allowed by the ACLs, and the error code and remark
the Java client reports for a denied topic, a wrong secret, an unknown key and no credentials;
mqadmin (rocketmq-tools 5.x) with credentials from $ROCKETMQ_HOME/conf/tools.yml.

The steps and expected answers are compat.validate_acl's, which checks them against a real Apache
RocketMQ 5.5 broker with ACL 2.0 on (both clients got exactly these codes and remarks there). The
Java producer retries a NO_PERMISSION send, then throws MQClientException with that response code
and the broker's MQBrokerException (the remark) as its cause.
"""
import os
import time

import pytest

from compat.harness import run_on_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from compat.validate_acl import REFUSALS, STEPS, check, mqadmin_as
from security import RELOAD_CHECK_S, rocketmq_perms
from security.acl import Authorizer
from security.credentials import CredentialStore

pytestmark = pytest.mark.timeout(600)
GATEWAY_ARGS = ["--authorizer", "acl", "--super-users", "User:admin"]
GATEWAY_STEPS = [STEPS[0], "consume:consume:alice:SK-alice:acl-orders:acl-cg:1", *STEPS[1:]]


def _users(gw):
    config = os.path.join(gw.data_dir, "config")
    creds, acls = CredentialStore(config), Authorizer(config)
    creds.set_access_key("admin", "admin-secret")
    creds.set_access_key("alice", "SK-alice")
    rocketmq_perms.grant(acls, "alice", "topic", "acl-orders", "PUB|SUB")
    rocketmq_perms.grant(acls, "alice", "group", "acl-cg", "SUB")
    time.sleep(RELOAD_CHECK_S + 0.2)  # a running gateway takes file changes in within RELOAD_CHECK_S


@pytest.fixture(scope="module", params=sorted(ROCKETMQ_CLIENTS))
def java_acl(request, tmp_path_factory):
    with run_on_gateway(tmp_path_factory.mktemp(f"java-acl-{request.param}"), ROCKETMQ_CLIENTS[request.param],
                        "compat.RocketAcl", lambda gw: [gw.namesrv, *GATEWAY_STEPS], before=_users,
                        gateway_args=GATEWAY_ARGS) as results:
        results.version = request.param
        yield results


def test_signed_send_and_consume(java_acl):
    assert java_acl["ok_send"]["status"] == "SEND_OK"
    assert java_acl["consume"]["bodies"] == ["ok_send"]


def test_refusals_as_the_java_client_reports_them(java_acl):
    assert check(java_acl) == []
    assert set(REFUSALS) <= set(java_acl.run.results)


def test_mqadmin_with_credentials(java_acl, tmp_path):
    if java_acl.version != "5":
        pytest.skip("mqadmin is rocketmq-tools 5.x; run once")
    ns, work = java_acl.gw.namesrv, str(tmp_path)
    ok = mqadmin_as("admin", "admin-secret", ["updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", "acl-made"], work)
    assert ok.returncode == 0 and "success" in ok.stdout.lower(), ok.stdout + ok.stderr
    denied = mqadmin_as("alice", "SK-alice", ["updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", "acl-not"], work)
    out = denied.stdout + denied.stderr
    assert "CODE: 16" in out and "User:alice has no permission to access Cluster:kafka-cluster" in out, out
    listed = mqadmin_as("admin", "admin-secret", ["topicList", "-n", ns], work)
    assert "acl-made" in listed.stdout and "acl-not" not in listed.stdout
