"""The short deterministic subset of the fault harness in `make test` (issue 26): one partition
(isolate), one pause past the lease TTL and one clock jump (+1 h) on a fixed seed, against a real
cluster of etcd and three gateways in network namespaces. The run plants one loss (--plant-loss
removes an acknowledged record from the final read), so the test proves both halves: the harness
reports that loss and nothing else, and the whole read (the plant put back) checks valid. The plant is
chosen after the whole read was checked, so it cannot hide an anomaly (workload.choose_plant); the
client's re-sends under a new producer epoch are judged as the harness judges them (duplicates.json),
and a failure prints every anomaly with its reads, sends and stored copies. Needs root,
ip/tc/iptables, etcd and libfaketime (`make setup` installs them); skipped with the reason otherwise.
Its own namespace prefix and subnet, so a `make faults` at the same time is not disturbed."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from checker import check  # noqa: E402
from disk import cleanup_mounts  # noqa: E402
from duplicates import reclassify  # noqa: E402
from netns import cleanup, missing_tools  # noqa: E402

PREFIX, SUBNET = "rgt", "10.78.0"
EOS_EVENT = re.compile(r"bump|fatal|desynchroni|skipped sequence|duplicate sequence|rewound|implicit", re.I)
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
    assert planted is not None, summary  # every partition's last acknowledged record was an anomaly itself
    assert result["lost"] == [planted["value"]], summary
    assert not (result["duplicated"] or result["reordered"] or result["unexpected"] or result["producer_fatal"]), summary
    assert result["ok"] > 0 and result["ok"] + result["fail"] + result["info"] == result["ops"], summary
    whole = judged_with_plant(tmp_path / "run", queue)
    assert not any(whole["anomalies"].values()), whole  # the whole read, the plant put back: nothing at all
    assert "lost 1" in open(tmp_path / "faults.md").read()


def judged_with_plant(run_dir, queue: dict) -> dict:
    """The whole final read (the planted record put back) checked as the harness checks it: the
    client's re-sends under a new producer epoch (duplicates.json, classed on the stopped stores)
    are reported, not anomalies (docs/faults.md). What a failure prints: each anomaly list, the
    plant, the re-sends, the anomaly the harness saw before planting, and every read copy and send
    of each value named."""
    result = queue["result"]
    whole = check(queue["history"], result["final_read"] + [result["planted"]])
    path = os.path.join(run_dir, "duplicates.json")
    explained = json.load(open(path)) if os.path.exists(path) else []
    reclassify(whole, explained)
    anomalies = {k: whole[k] for k in ("lost", "duplicated", "reordered", "unexpected")}
    named = set().union(*anomalies.values())
    reads = [r for r in result["final_read"] + [result["planted"]] if r["value"] in named]
    sends = [op for op in queue["history"] if op["value"] in named]
    return {"anomalies": anomalies, "planted": result["planted"], "client_resent": whole["client_resent"],
            "unplanted": result.get("unplanted"), "reads": sorted(reads, key=lambda r: (r["partition"], r["offset"]))[:100],
            "sends": sends[:40], "explained": [e for e in explained if e["value"] in named][:20],
            "producer_log": producer_events(os.path.join(run_dir, "queue-rdkafka.log"))}


def producer_events(path: str, most: int = 30) -> list[str]:
    """librdkafka's idempotence events in the run (debug=eos): epoch bumps and their cause, fatal errors."""
    if not os.path.exists(path):
        return []
    with open(path, errors="replace") as f:
        return [line.strip()[:300] for line in f if EOS_EVENT.search(line)][:most]
