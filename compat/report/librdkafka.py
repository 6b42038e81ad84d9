"""librdkafka's own regression tests (tests/ of the librdkafka source that the node-rdkafka npm package ships
under deps/librdkafka; `make compat-report-librdkafka` builds it and its test-runner, see mk/report.mk).

The share-group tests (KIP-932: the broker ones of 0170-0185) are newer than that copy: they come from the librdkafka source
that the @confluentinc/kafka-javascript npm package ships (deps/librdkafka, built to SHARE_TESTS_DIR) and run
in full mode (their sub-tests are not marked quick, so `-Q` would skip them all).

Each broker test (not TEST_F_LOCAL, not manual) runs alone: `TESTS=<name> test-runner -Q -L` with a test.conf
that points at the system under test, in its own process with a timeout, so one hang costs only itself.
"""
from __future__ import annotations

import os
import re
import subprocess
import time

from compat.jvm import ROOT
from compat.report.suite import FAIL, PASS, SKIP, SuiteRun

TESTS_DIR = os.path.join(ROOT, "compat", "report", "build", "librdkafka", "tests")
TEST_TIMEOUT_S = int(os.environ.get("COMPAT_RDKAFKA_TEST_TIMEOUT", "150"))
SHARE_TESTS_DIR = os.path.join(ROOT, "compat", "report", "build", "librdkafka-share", "tests")
SHARE_SUITE = "librdkafka share-consumer tests"
SHARE_TESTS = ("0170_share_consumer_subscription", "0171_share_consumer_consume", "0172_share_consumer_acknowledge",
               "0173_share_consumer_commit_async", "0174_share_consumer_concurrency", "0175_share_consumer_groups",
               "0176_share_consumer_commit_sync", "0177_share_consumer_transactions", "0178_share_consumer_close",
               "0179_share_consumer_destroy", "0180_share_consumer_config", "0181_share_consumer_topic_delete",
               "0184_share_consumer_topic_recreate", "0185_share_consumer_max_poll_interval")
# (its other 017x-019x tests are TEST_F_LOCAL, on librdkafka's mock cluster, or manual: 0190, telemetry)
SHARE_TIMEOUT_S = int(os.environ.get("COMPAT_RDKAFKA_SHARE_TIMEOUT", "1500"))  # 0171 sets 600 s, x2 multiplier
KAFKA_VERSION = "4.0.0"  # what the tests may assume of the broker (TEST_KAFKA_VERSION); the reference is 4.x
SHARE_KAFKA_VERSION = "4.3.1"  # the share tests need 4.2+ (TEST_BRKVER); the reference Kafka of bench/brokers.py
_DECL = re.compile(r"_TEST\(\s*(\w+)\s*,\s*([^,)]*)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# at TEST_LEVEL=1 a sub-test prints only its end: `[<test>/ 1.1s] [ <sub-test>: PASS (1.10s) ]` (or SKIP: why),
# or its failure: `### Test "<test> (<sub-test>)" failed at ...`
_SUB_END = re.compile(r"(?:^|\] )\[ (.*?): (PASS|SKIP)\b", re.M)
_SUB_FAIL = re.compile(r'### Test "\S+ \((.*)\)" failed at')
_STATE = re.compile(r"\|\s*(\w+)\s*\|\s*(PASSED|FAILED|SKIPPED|RUNNING|NOT STARTED)\s*\|")


def source_version(tests_dir: str = TESTS_DIR) -> str:
    """librdkafka's version from its rdkafka.h (RD_KAFKA_VERSION, 0xMMmmrrxx)."""
    with open(os.path.join(tests_dir, "..", "src", "rdkafka.h")) as f:
        v = int(re.search(r"#define RD_KAFKA_VERSION\s+(0x[0-9a-fA-F]+)", f.read()).group(1), 16)
    return f"{v >> 24}.{(v >> 16) & 0xff}.{(v >> 8) & 0xff}"


def available(tests_dir: str = TESTS_DIR) -> bool:
    return os.path.isfile(os.path.join(tests_dir, "test-runner"))


def broker_tests() -> list[str]:
    """The tests of test.c's table that need a broker (flags without TEST_F_LOCAL or TEST_F_MANUAL)."""
    with open(os.path.join(TESTS_DIR, "test.c")) as f:
        table = f.read().split("struct test tests[] = {", 1)[1]
    return [name for name, flags in _DECL.findall(table)
            if "TEST_F_LOCAL" not in flags and "TEST_F_MANUAL" not in flags and not name.startswith("8")]


def _reason(output: str, test: str) -> str:
    for line in output.splitlines():
        if "TEST FAILURE" in line or "Test FAILED" in line or ": FAIL" in line:
            following = output.split(line, 1)[1].strip().splitlines()
            detail = next((x for x in following if x.strip() and "###" not in x), "")
            return f"{line.strip()} {detail.strip()}"
    skip = re.search(r"SKIPP?(?:ING|ED)[^\n]*", output)
    return skip.group(0) if skip else ""


def subtests(output: str) -> list[tuple[str, str]]:
    """(sub-test, PASS / SKIP / FAIL) in the order a test's log ended them, repeats numbered (a test
    stops at its first failure; one that ran out of time names no sub-test)."""
    ended = _SUB_END.findall(output) + [(name, "FAIL") for name in dict.fromkeys(_SUB_FAIL.findall(output))]
    seen: dict = {}
    out = []
    for name, how in ended:  # a sub-test without a description (do_test_scenario:660) runs once per scenario
        seen[name] = seen.get(name, 0) + 1
        out.append((name if seen[name] == 1 else f"{name} #{seen[name]}", how))
    return out


def run(tests, bootstrap: str, system: str, work_dir: str, tests_dir: str = TESTS_DIR, quick: bool = True,
        timeout_s: int = TEST_TIMEOUT_S, suite: str = "librdkafka tests",
        kafka_version: str = KAFKA_VERSION) -> SuiteRun:
    result = SuiteRun(suite, system)
    os.makedirs(work_dir, exist_ok=True)
    conf = os.path.join(work_dir, f"test-{system}.conf")
    with open(conf, "w") as f:
        f.write(f"bootstrap.servers={bootstrap}\ntest.timeout.multiplier=2\ntest.topic.random=true\n")
    lib = os.path.join(tests_dir, "..", "src")
    env = {**os.environ, "RDKAFKA_TEST_CONF": conf, "TEST_KAFKA_VERSION": kafka_version,
           "LD_LIBRARY_PATH": f"{lib}:{lib}-cpp", "TEST_LEVEL": "1"}
    started = time.monotonic()
    for test in tests:
        try:
            p = subprocess.run(["./test-runner", *(["-Q"] if quick else []), "-L", "-p1", "-E"], cwd=tests_dir,
                               capture_output=True, text=True, errors="replace", timeout=timeout_s,
                               env={**env, "TESTS": test})
            output = _ANSI.sub("", p.stdout + p.stderr)
            states = dict(_STATE.findall(output))
            state = states.get(test, "FAILED" if p.returncode else "NOT STARTED")
        except subprocess.TimeoutExpired as e:
            output = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                             for x in (e.stdout, e.stderr))  # the sub-tests' ends are on stderr
            output = _ANSI.sub("", output)
            state, output = "TIMEOUT", output + f"\nkilled after {timeout_s}s"
        with open(os.path.join(work_dir, f"{system}-{test}.log"), "w") as f:
            f.write(output)
        if state == "PASSED":
            result.add(test, PASS)
        elif state == "SKIPPED":
            result.add(test, SKIP, _reason(output, test) or "skipped by the test")
        elif state == "TIMEOUT":
            result.add(test, FAIL, f"no result within {timeout_s} s")
        else:
            result.add(test, FAIL, _reason(output, test) or f"{state} (exit {p.returncode})")
        if not quick:  # full mode: each sub-test too, as `<test> / <function>:<line>: <what>`
            for sub, how in subtests(output):
                result.add(f"{test} / {sub}", PASS if how == "PASS" else SKIP if how == "SKIP" else FAIL)
    result.seconds = time.monotonic() - started
    return result
