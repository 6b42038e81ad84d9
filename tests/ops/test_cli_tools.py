"""docs/guide.md's command-line tools section stays true: `make cli-tools` writes ./bin/ wrappers from the
Maven jars, and each line of the guide's block runs as written (ports replaced by the test gateway's) as a
subprocess against a real gateway, in the guide's order, each with the output a reader would expect.
With KAFKA_REFERENCE_BOOTSTRAP=host:port (a real Apache Kafka, bench.brokers) the Kafka lines run against
it instead, so a difference is the gateway's; the mqadmin lines then are skipped (they read the Kafka
topic and group through RocketMQ's protocol: the gateway's one store, no Apache broker does that)."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from gateway_process import ROOT, GatewayProcess

GUIDE = os.path.join(ROOT, "docs", "guide.md")
BLOCK = re.compile(r"^```\n(make cli-tools\n.*?)^```", re.M | re.S)
# what each guide line prints (a substring per line, in the block's order)
EXPECTED = ["wrappers in ./bin/", "Created topic orders.", "", "order-42\tpaid",
            "billing", "Completed updating config",
            "retention.ms=86400000", "orders", "orders"]


def guide_lines() -> list[str]:
    with open(GUIDE, encoding="utf-8") as f:
        (block,) = BLOCK.findall(f.read())
    return [line for line in block.splitlines() if line.strip()]


REFERENCE = os.environ.get("KAFKA_REFERENCE_BOOTSTRAP")


@pytest.fixture
def addresses(tmp_path):
    """(Kafka bootstrap, namesrv or None) the block runs against."""
    if REFERENCE:
        yield REFERENCE, None
        return
    g = GatewayProcess(str(tmp_path / "data")).start()
    yield g.kafka_bootstrap, g.namesrv
    g.stop()


def test_guide_cli_block(addresses, tmp_path):
    bootstrap, namesrv = addresses
    lines = guide_lines()
    assert len(lines) == len(EXPECTED)
    env = dict(os.environ, HOME=str(tmp_path))  # mqadmin's client logs go under $HOME/logs
    for line, expected in zip(lines, EXPECTED):
        if namesrv is None and "mqadmin" in line:
            continue
        cmd = line.replace("127.0.0.1:9092", bootstrap).replace("127.0.0.1:9876", namesrv or "")
        r = subprocess.run(["sh", "-c", cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, (line, r.stdout, r.stderr)
        assert expected in r.stdout, (line, r.stdout, r.stderr)


def test_every_guide_tool_has_a_wrapper():
    """Every ./bin/ tool the guide names anywhere is one `make cli-tools` writes."""
    subprocess.run(["make", "-s", "cli-tools"], cwd=ROOT, check=True, capture_output=True)
    with open(GUIDE, encoding="utf-8") as f:
        named = set(re.findall(r"\./bin/([\w.-]+)", f.read()))
    assert named and all(os.access(os.path.join(ROOT, "bin", name), os.X_OK) for name in named), named
