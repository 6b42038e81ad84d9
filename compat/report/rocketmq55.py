"""RocketMQ 5.4/5.5 features as a suite: priority messages (RIP-80), lite topics and lite groups (RIP-83)
through the Java gRPC SDK rocketmq-client-java 5.2.0 and the repo's native remoting client, and message
traces through the 4.9 and 5.x remoting Java clients, and lite consumption, admin queries (mqadmin 5.5)
and lite TTL over raw remoting frames as 5.5's proxy sends them. Their pytest files run
first against Apache RocketMQ 5.5.0 (GRPC_TARGET=proxy: name server, a broker with LMQ on and the
cluster-mode proxy; REMOTING_TARGET=rocketmq: name server and broker), then against the gateway; one
row per test, from pytest's JUnit XML."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from compat.report.suite import FAIL, PASS, SKIP, SuiteRun

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = "RocketMQ 5.4/5.5 features (Java SDK 5.2 gRPC, native remoting)"
TESTS = ["tests/grpc/test_grpc_priority.py", "tests/grpc/test_grpc_lite.py", "tests/grpc/test_grpc_lite_bad_input.py",
         "tests/grpc/test_grpc_lite_groups.py", "tests/grpc/test_grpc_python_sdk_lite.py",
         "tests/pop/test_pop_priority.py", "tests/grpc/test_grpc_fifo_retry.py",
         "tests/remoting/test_message_trace.py", "tests/remoting/test_remoting_lite.py",
         "tests/remoting/test_remoting_lite_admin.py", "tests/remoting/test_remoting_lite_ttl.py"]
REFERENCE_ENV = {"GRPC_TARGET": "proxy", "REMOTING_TARGET": "rocketmq"}


def run(system: str, log_dir: str) -> SuiteRun:
    """`system` "rocketmq" (the reference) or "gateway"."""
    os.makedirs(log_dir, exist_ok=True)
    xml = os.path.join(log_dir, f"rocketmq55-{system}.xml")
    env = {**os.environ, **(REFERENCE_ENV if system == "rocketmq" else {})}
    if system != "rocketmq":
        env = {k: v for k, v in env.items() if k not in REFERENCE_ENV}
    started = time.monotonic()
    with open(os.path.join(log_dir, f"rocketmq55-{system}.log"), "wb") as log:
        subprocess.run([sys.executable, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider", f"--junitxml={xml}"],
                       cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=3600)
    result = SuiteRun(SUITE, system)
    result.seconds = time.monotonic() - started
    try:
        cases = ET.parse(xml).getroot().iter("testcase")
    except (OSError, ET.ParseError) as exc:
        result.error = f"no JUnit report: {exc}"
        return result
    for case in cases:
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        failed = case.find("failure") if case.find("failure") is not None else case.find("error")
        if failed is not None:
            result.add(name, FAIL, failed.get("message", ""))
        elif case.find("skipped") is not None:
            result.add(name, SKIP, case.find("skipped").get("message", ""))
        else:
            result.add(name, PASS)
    return result
