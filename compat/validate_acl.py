"""The RocketMQ ACL steps (compat.RocketAcl) and what the Java client must report, checked against a
real Apache RocketMQ 5.x broker with ACL 2.0 on (authentication + authorization, local metadata):

    .venv/bin/python -m compat.validate_acl

tests/security/test_java_rocketmq_acl.py runs the same steps against `--authorizer acl` and expects
the same answers. Not part of the test suite: it needs the bench jars and a minute.
"""
from __future__ import annotations

import os
import sys
import tempfile

from bench.brokers import RocketMQBroker
from compat.jvm import MQADMIN, ROCKETMQ_CLIENTS, ScenarioRun, run_tool

NO_PERMISSION = 16
# label:action:accessKey:secretKey:topic[:group:count] ("-" = no credentials). User alice may publish to
# (and, on the gateway, subscribe to) acl-orders; nobody is allowed acl-other.
STEPS = ["ok_send:send:alice:SK-alice:acl-orders",
         "denied:send:alice:SK-alice:acl-other",
         "wrong_secret:send:alice:not-the-secret:acl-orders",
         "unknown_key:send:AK-nobody:SK-alice:acl-orders",
         "no_credentials:send:-:-:acl-orders"]
REFUSALS = {
    "denied": "User:alice has no permission to access Topic:acl-other from 127.0.0.1, no matched policies.",
    "wrong_secret": "check signature failed.",
    "unknown_key": "User:AK-nobody is not found.",
    "no_credentials": "username cannot be null.",
}
SUPER_USER, SUPER_SECRET = "rocketmq", "12345678"
BROKER_ACL = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationMetadataProvider":
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationMetadataProvider":
        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "initAuthenticationUser": f'{{"username":"{SUPER_USER}","password":"{SUPER_SECRET}"}}',
    "innerClientAuthenticationCredentials": f'{{"accessKey":"{SUPER_USER}","secretKey":"{SUPER_SECRET}"}}',
}


def check(run) -> list[str]:
    """Problems with one run's results (run[label] gives a step's result)."""
    problems = []
    if not run["ok_send"].get("sent"):
        problems.append(f"ok_send was not sent: {run['ok_send']}")
    for label, remark in REFUSALS.items():
        r = run[label]
        if r.get("sent") or r.get("code") != NO_PERMISSION or r.get("remark") != remark:
            problems.append(f"{label}: expected code {NO_PERMISSION} {remark!r}, got {r}")
    return problems


def mqadmin_as(access_key: str, secret_key: str, args: list[str], work: str):
    """mqadmin with credentials from $ROCKETMQ_HOME/conf/tools.yml (how the tool reads them)."""
    home = os.path.join(work, f"home-{access_key}")
    os.makedirs(os.path.join(home, "conf"), exist_ok=True)
    with open(os.path.join(home, "conf", "tools.yml"), "w") as f:
        f.write(f"accessKey: {access_key}\nsecretKey: {secret_key}\n")
    saved = os.environ.get("ROCKETMQ_HOME")
    os.environ["ROCKETMQ_HOME"] = home
    try:
        return run_tool("rocketmqtools", MQADMIN, args, os.path.join(work, "mqadmin"))
    finally:
        if saved is None:
            del os.environ["ROCKETMQ_HOME"]
        else:
            os.environ["ROCKETMQ_HOME"] = saved


def main() -> int:
    problems = []
    with tempfile.TemporaryDirectory(prefix="compat-validate-acl-") as tmp:
        with RocketMQBroker(f"{tmp}/rocketmq", extra=BROKER_ACL) as broker:
            addr = f"127.0.0.1:{broker.broker_port}"
            for args in (["createUser", "-b", addr, "-u", "alice", "-p", "SK-alice"],
                         ["createAcl", "-b", addr, "-s", "User:alice", "-r", "Topic:acl-orders", "-a", "Pub",
                          "-d", "Allow"],
                         ["updateTopic", "-b", addr, "-t", "acl-orders"]):
                r = mqadmin_as(SUPER_USER, SUPER_SECRET, [args[0], "-n", broker.namesrv, *args[1:]], tmp)
                if r.returncode != 0:
                    problems.append(f"mqadmin {args[0]}: {r.stdout[-500:]}{r.stderr[-500:]}")
            for version, module in ROCKETMQ_CLIENTS.items():
                run = ScenarioRun(module, "compat.RocketAcl", [broker.namesrv, *STEPS], f"{tmp}/logs-{module}")
                found = check(run)
                print(f"{'PASS' if not found else 'FAIL'} {module} ({version})", *found, sep="\n  ")
                problems += found
    print("validation:", "OK" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
