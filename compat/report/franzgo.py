"""franz-go's own `pkg/kgo` integration tests (shipped in the module zip from the Go module proxy).

compat/report/franzgo/go.mod pins the version; the test binary is built once with `go test -c` and each
broker-facing test (gotests.broker_tests) runs in its own process with a timeout, so one hang does not
take the others down. The tests find the broker through KGO_SEEDS; KGO_TEST_RF=1 for a single node and
KGO_TEST_RECORDS keeps the ETL tests to a size that fits the run.
"""
from __future__ import annotations

import os
import re
import subprocess
import time

from compat.report.gotests import broker_tests
from compat.report.suite import FAIL, PASS, SKIP, SuiteRun

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "franzgo")
PACKAGE = "github.com/twmb/franz-go/pkg/kgo"
SEED_HELPERS = {"adm", "newTestClient", "testClientOpts", "getSeedBrokers"}
RECORDS = int(os.environ.get("KGO_TEST_RECORDS", "20000"))
TEST_TIMEOUT_S = int(os.environ.get("COMPAT_GO_TEST_TIMEOUT", "120"))


def _go(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["go", *args], cwd=HERE, capture_output=True, text=True, **kw)


def build(out_dir: str) -> tuple[str, list[str], str]:
    """(test binary, broker-facing test names, franz-go version)."""
    listed = _go(["list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/twmb/franz-go"], check=True)
    module_dir, version = listed.stdout.split()
    binary = os.path.join(out_dir, "kgo.test")
    _go(["test", "-c", "-o", binary, PACKAGE], check=True, timeout=1200)
    return binary, broker_tests(os.path.join(module_dir, "pkg", "kgo"), SEED_HELPERS), version


def _reason(output: str) -> str:
    """The first assertion/panic line of a failed test's output."""
    for line in output.splitlines():
        s = line.strip()
        if re.match(r"\w+_test\.go:\d+:", s) or s.startswith("panic:"):
            return s
    timeout = re.search(r"panic: test timed out after \S+", output)
    return timeout.group(0) if timeout else (output.strip().splitlines() or ["no output"])[-1]


def run(binary: str, tests: list[str], bootstrap: str, system: str, log_dir: str) -> SuiteRun:
    result = SuiteRun("franz-go kgo", system)
    env = {**os.environ, "KGO_SEEDS": bootstrap, "KGO_TEST_RF": "1", "KGO_TEST_RECORDS": str(RECORDS),
           "KGO_LOG_LEVEL": "none"}
    started = time.monotonic()
    os.makedirs(log_dir, exist_ok=True)
    for test in tests:
        cmd = [binary, "-test.run", f"^{test}$", "-test.v", "-test.count=1", f"-test.timeout={TEST_TIMEOUT_S}s"]
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TEST_TIMEOUT_S + 30)
            output, code = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            output, code = f"{(e.stdout or b'')!r}\nkilled after {TEST_TIMEOUT_S + 30}s", -1
        with open(os.path.join(log_dir, f"{test}.log"), "w") as f:
            f.write(output)
        if f"--- SKIP: {test}" in output:
            result.add(test, SKIP, _reason(output))
        elif code == 0 and f"--- PASS: {test}" in output:
            result.add(test, PASS)
        else:
            result.add(test, FAIL, _reason(output))
    result.seconds = time.monotonic() - started
    return result
