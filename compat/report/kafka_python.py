"""kafka-python's own integration tests (test/integration of its sdist from PyPI, the version installed in the
venv; `make compat-report-kafka-python` unpacks it). Their fixtures take an external broker from KAFKA_URI;
KAFKA_VERSION says what the tests may assume of it. The SASL and SSL modules need their own listeners and are
left out. pytest writes JUnit XML, read back per test."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from compat.jvm import ROOT
from compat.report.suite import FAIL, PASS, SKIP, SuiteRun, one_line

BUILD = os.path.join(ROOT, "compat", "report", "build")
MODULES = ["test/integration/test_admin_integration.py", "test/integration/test_consumer_integration.py",
           "test/integration/test_producer_integration.py"]
KAFKA_VERSION = "4.2.0"  # the fixtures' own default
TEST_TIMEOUT_S = 120


def installed_version() -> str:
    from importlib.metadata import version
    return version("kafka-python")


def sdist_dir() -> str:
    return os.path.join(BUILD, f"kafka_python-{installed_version()}")


def available() -> bool:
    return os.path.isdir(os.path.join(sdist_dir(), "test", "integration"))


# The sdist ships test/integration but not test/service.py, the helper that spawns brokers. With an external broker
# (KAFKA_URI) the fixtures only build an ExternalService and call its no-op methods; this stand-in provides that
# and refuses to spawn anything.
_SERVICE_STAND_IN = '''"""Stand-in for kafka-python's test/service.py (not in the sdist): external brokers only."""


class ExternalService:
    def __init__(self, host, port):
        self.host, self.port = host, port

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("compat-report runs kafka-python's tests against an external broker (KAFKA_URI) only")
'''


def _complete_sdist(root: str) -> None:
    """test/ as a regular package (as a namespace package it loses to the standard library's `test`) and the
    service stand-in."""
    open(os.path.join(root, "test", "__init__.py"), "a").close()
    service = os.path.join(root, "test", "service.py")
    if not os.path.exists(service):
        with open(service, "w") as f:
            f.write(_SERVICE_STAND_IN)


def run(bootstrap: str, system: str, log_dir: str) -> SuiteRun:
    result = SuiteRun("kafka-python integration tests", system)
    os.makedirs(log_dir, exist_ok=True)
    xml_path = os.path.join(log_dir, f"kafka-python-{system}.xml")
    # KAFKA_ROOT (a Kafka distribution for spawned brokers) must name a directory even for an external broker
    env = {**os.environ, "KAFKA_URI": f"PLAINTEXT://{bootstrap}", "KAFKA_VERSION": KAFKA_VERSION, "KAFKA_ROOT": log_dir}
    _complete_sdist(sdist_dir())
    started = time.monotonic()
    with open(os.path.join(log_dir, f"kafka-python-{system}.log"), "w") as log:
        subprocess.run([sys.executable, "-m", "pytest", *MODULES, "-p", "no:cacheprovider", "-q", "-o", "addopts=",
                        f"--timeout={TEST_TIMEOUT_S}", "--timeout-method=signal", f"--junitxml={xml_path}"],
                       cwd=sdist_dir(), env=env, stdout=log, stderr=subprocess.STDOUT, timeout=3600)
    result.seconds = time.monotonic() - started
    if not os.path.exists(xml_path):
        with open(os.path.join(log_dir, f"kafka-python-{system}.log")) as log:
            result.error = one_line(log.read().strip().splitlines()[-1] if log else "no output")
        return result
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            result.add(name, FAIL, failure.get("message") or failure.text or "failed")
        elif skipped is not None:
            result.add(name, SKIP, skipped.get("message") or "skipped")
        else:
            result.add(name, PASS)
    result.seconds = time.monotonic() - started
    return result
