"""Shared fixtures: a real gateway process on free loopback ports with a temp data dir."""
from __future__ import annotations

import pytest

from gateway_process import GatewayProcess, free_port, stop_all, wait_port  # noqa: F401 - re-exported for tests


@pytest.fixture
def gateway_factory(tmp_path):
    started: list[GatewayProcess] = []

    def make(flush: str = "async", extra_args: list[str] | None = None, name: str = "data") -> GatewayProcess:
        g = GatewayProcess(str(tmp_path / name), flush=flush, extra_args=extra_args)
        started.append(g)
        return g.start()

    yield make
    stop_all(started)  # every one, even when one fails to stop


@pytest.fixture
def gateway(gateway_factory) -> GatewayProcess:
    return gateway_factory()
