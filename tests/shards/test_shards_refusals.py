"""`--shards` refusals are one line and exit 2: 0, more than the usable cores, and a data dir that
holds a one-process gateway's store (moving a store into shards is not done)."""
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


def test_a_one_process_data_dir_is_refused_with_the_command_that_starts_it(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 usable cores")
    os.makedirs(tmp_path / "d" / "commitlog")
    result = run("--shards", "2", "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: data dir {str(tmp_path / 'd')!r} holds a one-process gateway's store: start it with "
        f"--shards 1 (moving it into shards is not done yet, docs/shards.md)"]
