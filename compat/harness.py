"""Module-scoped gateways for tests/compat: one gateway process per client JVM run.

The JVM runs are the slow part, so a test module starts one gateway and one JVM per client version
and its tests assert on the recorded results. The process class is the `gateway` fixture's own
(tests/gateway_process.py), loaded by path so a module-scoped fixture can build one.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os

import pytest

from compat.jvm import ROOT, ScenarioRun

_spec = importlib.util.spec_from_file_location("rocketgate_gateway_process", os.path.join(ROOT, "tests", "gateway_process.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
GatewayProcess = _module.GatewayProcess


def start_gateway(directory, extra_args: list[str] | None = None) -> GatewayProcess:
    """A fresh gateway with its data under `directory` (a pytest tmp dir), started with `extra_args`."""
    return GatewayProcess(os.path.join(str(directory), "data"), extra_args=extra_args).start()


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
def run_on_gateway(directory, module: str, main: str, args, restart_at_pause: bool = False, before=None,
                   on_pause=None, gateway_args: list[str] | None = None):
    """Starts a gateway (with `gateway_args`), calls `before(gw)`, runs the scenario program with `args(gw)`
    to its end (at a `pause` scenario: restarts the gateway if asked, else calls `on_pause(gw, log_dir)`),
    yields the Results, stops the gateway."""
    gw = start_gateway(directory, gateway_args)
    try:
        if before is not None:
            before(gw)
        log_dir = os.path.join(str(directory), "logs")
        pause = gw.restart if restart_at_pause else (lambda: on_pause(gw, log_dir)) if on_pause else None
        run = ScenarioRun(module, main, args(gw), log_dir, on_pause=pause)
        yield Results(run, gw, log_dir)
    finally:
        gw.stop()
