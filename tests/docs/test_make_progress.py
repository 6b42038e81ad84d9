"""`make install`, `make run` and `make setup` print one progress line per step while they install
("[2/9] bench-jars ..." before a step with work to do, "[2/9] bench-jars ok" for one already done).
Checked with make's dry run (`make -n`: the progress lines print, each step's commands are only shown),
so nothing is installed; the "ok" case on a step really done here (the native helper, built first)."""
from __future__ import annotations

import re
import shutil
import subprocess

from gateway_process import ROOT

STEP = re.compile(r"^\[(\d+)/(\d+)\] (\S+) (\.\.\.|ok)$", re.M)


def dry_run(*args: str) -> tuple[list[tuple[int, int, str, str]], str]:
    out = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return [(int(i), int(n), name, state) for i, n, name, state in STEP.findall(out)], out


def setup_targets() -> list[str]:
    return subprocess.run(["make", "-s", "--eval", "print-setup: ; @echo $(SETUP_TARGETS)", "print-setup"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout.split()


def test_run_prints_each_step():
    subprocess.run(["make", "-s", "native"], cwd=ROOT, check=True, capture_output=True, timeout=120)
    steps, out = dry_run("run")
    assert [(i, n, name) for i, n, name, _ in steps] == [
        (1, 3, "python-packages"), (2, 3, "native"), (3, 3, "cluster-etcd")], out
    assert steps[1][3] == "ok", out  # built just above: nothing left to do
    if shutil.which("etcd"):
        assert steps[2][3] == "ok", out  # installed: the step has nothing to run
    assert "-m gateway" in out  # then the gateway itself (only shown: a dry run)


def test_install_and_setup_number_every_step():
    steps, out = dry_run("install")
    assert [(i, n, name) for i, n, name, _ in steps] == [(1, 1, "python-packages")], out
    names = ["python-packages", *setup_targets()]
    steps, out = dry_run("setup")
    assert [(i, n, name) for i, n, name, _ in steps] == [(i, len(names), t) for i, t in enumerate(names, 1)], out
