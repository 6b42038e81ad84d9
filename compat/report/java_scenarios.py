"""The Java client scenario programs (compat/java: kafka-clients 3.9/4.x, rocketmq-client 4.9/5.x) as a suite:
one row per check of compat.validate, whose expectations tests/compat assert against the gateway."""
from __future__ import annotations

import time

from compat.jvm import ScenarioRun
from compat.report.suite import FAIL, PASS, SuiteRun
from compat.validate import SYSTEMS


def run(protocol: str, version: str, system, log_dir: str) -> SuiteRun:
    """Runs the `protocol` ("kafka"/"rocketmq") scenarios with client `version` against `system` (a started
    bench.brokers System; restarted at the program's `pause`)."""
    _, _, clients, program, scenarios, checks = SYSTEMS[protocol]
    module = clients[version]
    client = "kafka-clients" if protocol == "kafka" else "rocketmq-client"
    result = SuiteRun(f"Java {client} {version} scenarios", system.name)
    started = time.monotonic()
    target = system.bootstrap if protocol == "kafka" else system.namesrv
    scenario_run = ScenarioRun(module, program, [target, f"r{module}", *scenarios], log_dir, on_pause=system.restart)
    for name, check, needed in checks:
        try:
            check(*(scenario_run[s] for s in needed))
            result.add(name, PASS)
        except AssertionError as e:
            result.add(name, FAIL, _reason(str(e)))
    result.seconds = time.monotonic() - started
    return result


def _reason(message: str) -> str:
    """For a Java exception, its exception line; otherwise the assertion message."""
    lines = [x.strip() for x in message.splitlines() if x.strip()]
    for line in lines[1:]:
        if "Exception" in line or "Error" in line:
            return f"{lines[0]} {line}"
    return lines[0] if lines else "assertion failed"
