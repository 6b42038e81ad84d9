"""The diskless workload of the fault harness (issue 28; tests/faults/diskless.py), short: one
partition (isolate), one pause past the lease TTL and one kill -9 on a fixed seed, against etcd and
three gateways in network namespaces sharing one bucket of a real SeaweedFS server, with an
idempotent librdkafka producer on a diskless topic. A loss is planted (one acknowledged record dropped
from the final read), so the run must report exactly it: nothing else lost, no value duplicated but
the client's own re-sends, and the bucket's index unbroken (no gap, no overlap, no batch committed
twice: the fencing). Needs root and the harness's tools; its own namespace prefix and subnet (long
list: about 3 minutes on a quiet machine)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from checker import check  # noqa: E402
from disk import cleanup_mounts  # noqa: E402
from netns import cleanup, missing_tools  # noqa: E402

PREFIX = os.environ.get("FAULTS_DISKLESS_PREFIX", "rgd")  # another harness at the same time: another pair
SUBNET = os.environ.get("FAULTS_DISKLESS_SUBNET", "10.79.0")
RUN = os.path.join(os.path.dirname(__file__), "run.py")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the fault harness needs root (network namespaces)"),
    pytest.mark.skipif(bool(missing_tools()), reason=f"the fault harness needs {', '.join(missing_tools())}"),
]


def test_kill_pause_and_isolate_lose_nothing_on_a_diskless_topic_and_a_planted_loss_is_reported():
    work = tempfile.mkdtemp(prefix="dlf-", dir="/tmp")  # short: the S3 server's unix sockets live under it
    cmd = [sys.executable, RUN, "--seed", "5", "--rounds", "3", "--faults", "isolate,pause,kill",
           "--fault-s", "5", "--heal-s", "8", "--workloads", "diskless", "--plant-loss", "--prefix", PREFIX,
           "--subnet", SUBNET, "--run-dir", os.path.join(work, "run"), "--report", os.path.join(work, "faults.md")]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert os.path.exists(os.path.join(work, "faults.md")), (done.stdout[-3000:], done.stderr[-3000:])
        run = json.load(open(os.path.join(work, "run", "history.json")))
        report = open(os.path.join(work, "faults.md")).read()
    finally:
        cleanup(PREFIX)
        cleanup_mounts(PREFIX)
        shutil.rmtree(work, ignore_errors=True)
    load = run.get("workloads", {}).get("diskless", {})
    result = load.get("result", {})
    summary = {k: v for k, v in result.items() if k not in ("final_read", "client_resent")}
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-2000:], summary)  # the plant, and only it
    assert sorted(e["fault"] for e in run["nemesis"]) == ["isolate", "kill", "pause"]
    planted = result["planted"]
    assert result["lost"] == [planted["value"]], summary
    assert not (result["duplicated"] or result["reordered"] or result["unexpected"] or result["producer_fatal"]), summary
    assert result["fenced"] == [] and result["index_entries"] > 0, summary
    # the Kafka read equals the bucket's, and no reader was sent back (before the OffsetForLeaderEpoch
    # fix this seed's runs read partitions several times over, or stopped at `unserved_end`)
    assert result["read_from"] == "kafka" and not result["read_differs"] and not result["unserved_end"], summary
    assert result["ok"] > 0 and result["ok"] + result["fail"] + result["info"] == result["ops"], summary
    resent = set(result.get("client_resent", []))
    final = [r for r in result["final_read"] if r["value"] not in resent] + [planted]
    assert check([op for op in load["history"] if op["value"] not in resent], final)["valid"]
    assert "lost 1" in report
