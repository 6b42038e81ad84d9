"""Module-scoped gateways for tests/compat: one gateway process per client JVM run.

The JVM runs are the slow part, so a test module starts one gateway and one JVM per client version
and its tests assert on the recorded results. The process class is the `gateway` fixture's own
(tests/conftest.py), loaded by path so a module-scoped fixture can build one.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os

import pytest

from compat.jvm import ROOT, ScenarioRun

_spec = importlib.util.spec_from_file_location("_rocketgate_test_conftest", os.path.join(ROOT, "tests", "conftest.py"))
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
GatewayProcess = _conftest.GatewayProcess


def start_gateway(directory) -> GatewayProcess:
    """A fresh gateway with its data under `directory` (a pytest tmp dir)."""
    return GatewayProcess(os.path.join(str(directory), "data")).start()


@pytest.fixture(scope="module", name="gw")
def module_gateway(tmp_path_factory):
    """Fixture `gw`: one gateway for a test module (import it into the module to use it)."""
    g = start_gateway(tmp_path_factory.mktemp("gateway"))
    yield g
    g.stop()


def failure_context(gw: GatewayProcess) -> str:
    """The gateway's log tail, for assertion messages."""
    try:
        return f"\n--- gateway log tail ({gw.log_path}) ---\n{gw.log()[-3000:]}"
    except OSError:
        return ""


class Results:
    """A finished scenario run plus the gateway it ran against, so a failed assertion shows both sides."""

    def __init__(self, run: ScenarioRun, gw: GatewayProcess, log_dir: str):
        self.run, self.gw, self.log_dir = run, gw, log_dir

    def __getitem__(self, scenario: str) -> dict:
        try:
            return self.run[scenario]
        except AssertionError as e:
            raise AssertionError(f"{e}{failure_context(self.gw)}") from None


@contextlib.contextmanager
def run_on_gateway(directory, module: str, main: str, args, restart_at_pause: bool = False, before=None):
    """Starts a gateway, calls `before(gw)`, runs the scenario program with `args(gw)` to its end
    (restarting the gateway at a `pause` scenario if asked), yields the Results, stops the gateway."""
    gw = start_gateway(directory)
    try:
        if before is not None:
            before(gw)
        log_dir = os.path.join(str(directory), "logs")
        run = ScenarioRun(module, main, args(gw), log_dir, on_pause=gw.restart if restart_at_pause else None)
        yield Results(run, gw, log_dir)
    finally:
        gw.stop()
