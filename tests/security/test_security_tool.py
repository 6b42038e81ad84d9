"""`python -m security` (the tool that manages users, keys and ACLs), the gateway flags, and the
Security object's live reload of files changed by the tool."""
import json
import os
import subprocess
import sys

import pytest

import security
from gateway.config import parse_args
from gateway_process import ROOT
from security.__main__ import run
from security.acl import Operation as Op, ResourceType as RT


def test_flags_default_off_and_parse(tmp_path):
    config = parse_args([])
    assert config.authorizer == "none" and security.from_config(config, str(tmp_path)) is None
    config = parse_args(["--authorizer", "acl", "--super-users", "User:admin, User:ops",
                         "--allow-everyone-if-no-acl-found"])
    assert config.authorizer == "acl" and config.allow_everyone_if_no_acl_found
    assert security.parse_principals(config.super_users) == ["User:admin", "User:ops"]


def test_bad_authorizer_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "gateway", "--authorizer", "kerberos"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("rocketgate: error:") and "Traceback" not in r.stderr


def test_tool_manages_users_keys_and_acls(tmp_path, capsys):
    d = str(tmp_path / "data")
    run(["--data-dir", d, "user", "set", "alice", "--password", "pw", "--mechanism", "SCRAM-SHA-512"])
    run(["--data-dir", d, "access-key", "set", "AK", "--secret", "SK", "--user", "alice"])
    run(["--data-dir", d, "acl", "add", "--principal", "User:alice", "--topic", "app.", "--prefixed",
         "--operation", "WRITE"])
    run(["--data-dir", d, "acl", "add", "--principal", "User:alice", "--cluster", "--operation", "ALTER", "--deny"])
    run(["--data-dir", d, "rocketmq", "grant", "alice", "group", "g", "SUB"])
    run(["--data-dir", d, "rocketmq", "whitelist", "10.0.0.*"])
    capsys.readouterr()
    run(["--data-dir", d, "list"])
    listed = json.loads(capsys.readouterr().out)
    assert listed["users"] == {"alice": [["SCRAM-SHA-512", 4096]]}
    assert listed["access_keys"] == {"AK": "alice"}
    assert listed["rocketmq_whitelist"] == ["10.0.0.*"]
    assert len(listed["acls"]) == 3
    run(["--data-dir", d, "acl", "remove", "--principal", "User:alice", "--topic", "app.", "--prefixed",
         "--operation", "WRITE"])
    run(["--data-dir", d, "user", "delete", "alice"])
    capsys.readouterr()  # the changes' confirmations
    run(["--data-dir", d, "list"])
    listed = json.loads(capsys.readouterr().out)
    assert listed["users"] == {} and len(listed["acls"]) == 2


def test_tool_errors_are_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "security", "--data-dir", str(tmp_path), "rocketmq", "grant", "a",
                        "group", "g", "PUB"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("security: error:") and "Traceback" not in r.stderr


def test_security_rereads_files_the_tool_changed(tmp_path):
    class Clock:
        t = 0.0

        def __call__(self):
            return self.t
    clock = Clock()
    data = str(tmp_path / "data")
    sec = security.Security(os.path.join(data, "config"), environ={}, clock=clock)
    assert not sec.authorizer.authorize("User:bob", "h", Op.READ, RT.TOPIC, "t")
    run(["--data-dir", data, "rocketmq", "grant", "bob", "topic", "t", "SUB"])
    run(["--data-dir", data, "access-key", "set", "BK", "--secret", "BS", "--user", "bob"])
    sec.refresh()  # checked at most once a second
    assert not sec.authorizer.authorize("User:bob", "h", Op.READ, RT.TOPIC, "t")
    clock.t += 1.5
    sec.refresh()
    assert sec.authorizer.authorize("User:bob", "h", Op.READ, RT.TOPIC, "t")
    assert sec.credentials.access_key("BK").user == "bob"


@pytest.mark.parametrize("bad", [["user", "set", "x", "--password", "p", "--iterations", "10"],
                                 ["acl", "add", "--principal", "alice", "--topic", "t", "--operation", "READ"]])
def test_tool_refuses_bad_input(tmp_path, bad):
    r = subprocess.run([sys.executable, "-m", "security", "--data-dir", str(tmp_path), *bad], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "security: error:" in r.stderr


@pytest.mark.parametrize("name, text", [("credentials.json", "{not json"), ("acls.json", '{"acls": [{"name": 1}]}')])
def test_a_damaged_file_is_a_clear_error(tmp_path, name, text):
    config = tmp_path / "config"
    config.mkdir()
    (config / name).write_text(text)
    with pytest.raises(ValueError, match=name):
        security.Security(str(config), environ={})


def test_a_damaged_file_stops_the_gateway_start(tmp_path):
    config = tmp_path / "data" / "config"
    config.mkdir(parents=True)
    (config / "acls.json").write_text("{oops")
    r = subprocess.run([sys.executable, "-m", "gateway", "--data-dir", str(tmp_path / "data"), "--authorizer", "acl",
                        "--kafka-port", "0", "--remoting-port", "0"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("rocketgate: error:") and "acls.json" in r.stderr
    assert "Traceback" not in r.stderr


def test_tool_confirms_each_change_in_one_line(tmp_path):
    d = str(tmp_path / "data")

    def tool(*args) -> list[str]:
        r = subprocess.run([sys.executable, "-m", "security", "--data-dir", d, *args], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()

    assert tool("user", "set", "alice", "--password", "pw") == [
        "user alice: SCRAM-SHA-256 credentials set (4096 iterations)",
        "user alice: SCRAM-SHA-512 credentials set (4096 iterations)"]
    assert tool("access-key", "set", "AK", "--secret", "SK", "--user", "alice") == [
        "access key AK: set, for user alice"]
    assert tool("acl", "add", "--principal", "User:alice", "--topic", "app.", "--prefixed",
                "--operation", "WRITE") == ["ACL added: ALLOW User:alice WRITE on TOPIC 'app.' (prefixed) from host *"]
    assert tool("acl", "remove", "--principal", "User:alice", "--topic", "app.", "--prefixed",
                "--operation", "WRITE") == ["ACL removed: ALLOW User:alice WRITE on TOPIC 'app.' (prefixed) from host *"]
    assert tool("acl", "remove", "--principal", "User:alice", "--topic", "app.", "--operation", "WRITE") == [
        "no ACL ALLOW User:alice WRITE on TOPIC 'app.' (literal) from host * (nothing removed)"]
    assert tool("rocketmq", "grant", "alice", "topic", "orders", "PUB|SUB") == [
        "RocketMQ: user alice now has PUB|SUB on topic 'orders'"]
    assert tool("rocketmq", "admin", "alice") == ["RocketMQ: user alice may now run admin operations"]
    assert tool("rocketmq", "whitelist", "10.0.0.*") == ["RocketMQ: global IP whitelist set to 10.0.0.*"]
    assert tool("user", "delete", "alice", "--mechanism", "SCRAM-SHA-512") == [
        "user alice: SCRAM-SHA-512 credentials deleted"]
    assert tool("access-key", "delete", "nope") == ["access key nope: not found (nothing deleted)"]
