"""The short deterministic subset of the fault harness in `make test` (issue 26): one partition
(isolate), one pause past the lease TTL and one clock jump (+1 h) on a fixed seed, against a real
cluster of etcd and three gateways in network namespaces. The run plants one loss (--plant-loss
removes an acknowledged record from the final read), so the test proves both halves: the harness
reports that loss and nothing else, and the history without the plant checks valid. Needs root,
ip/tc/iptables, etcd and libfaketime (`make setup` installs them); skipped with the reason otherwise.
Its own namespace prefix and subnet, so a `make faults` at the same time is not disturbed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from checker import check  # noqa: E402
from disk import cleanup_mounts  # noqa: E402
from netns import cleanup, missing_tools  # noqa: E402

PREFIX, SUBNET = "rgt", "10.78.0"
RUN = os.path.join(os.path.dirname(__file__), "run.py")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the fault harness needs root (network namespaces)"),
    pytest.mark.skipif(bool(missing_tools()), reason=f"the fault harness needs {', '.join(missing_tools())}"),
]


def test_one_partition_one_pause_one_clock_jump_lose_nothing_and_a_planted_loss_is_reported(tmp_path):
    cmd = [sys.executable, RUN, "--seed", "3", "--rounds", "3", "--faults", "isolate,pause,clock-jump",
           "--fault-s", "4", "--heal-s", "5", "--workloads", "queue", "--plant-loss", "--prefix", PREFIX, "--subnet", SUBNET,
           "--run-dir", str(tmp_path / "run"), "--report", str(tmp_path / "faults.md")]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    finally:
        cleanup(PREFIX)
        cleanup_mounts(PREFIX)
    run = json.load(open(tmp_path / "run" / "history.json"))
    summary = {k: v for k, v in run.get("workloads", {}).get("queue", {}).get("result", {}).items() if k != "final_read"}
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-2000:], summary)  # the plant, and only it
    assert [e["fault"] for e in run["nemesis"]] == ["pause", "clock-jump", "isolate"]
    queue = run["workloads"]["queue"]
    result, planted = queue["result"], queue["result"]["planted"]
    assert result["lost"] == [planted["value"]], summary
    assert not (result["duplicated"] or result["reordered"] or result["unexpected"] or result["producer_fatal"]), summary
    assert result["ok"] > 0 and result["ok"] + result["fail"] + result["info"] == result["ops"], summary
    assert check(queue["history"], result["final_read"] + [planted])["valid"]
    assert "lost 1" in open(tmp_path / "faults.md").read()
