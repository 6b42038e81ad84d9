"""`--shards` refusals are one line and exit 2: 0, more than the usable cores, a non-number (a
one-process gateway's data dir is moved into shards: test_shards_migration.py)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gateway_process import ROOT


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("count", ["0", str(len(os.sched_getaffinity(0)) + 1), "many"])
def test_a_shard_count_outside_one_to_the_cores_exits_2(tmp_path, count):
    result = run("--shards", count, "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    assert "argument --shards: invalid shard count" in result.stderr
    assert not (tmp_path / "d").exists()
