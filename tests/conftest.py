"""Shared fixtures: a real gateway process on free loopback ports with a temp data dir; a real S3 server."""
from __future__ import annotations

import os

import pytest

from long_cases import is_long, long_prefixes
from gateway_process import GatewayProcess, free_port, stop_all, wait_port  # noqa: F401 - re-exported for tests
# a real S3-compatible server and the object store on it, for every test directory
from objstore_fixtures import object_store, s3_bucket, seaweed_factory, seaweed_s3  # noqa: F401


def pytest_configure(config):
    """The processes tests start (1000+ `python -m gateway` a run) keep their compiled bytecode:
    with PYTHONDONTWRITEBYTECODE set each start compiled our ~300 modules again (~0.35 s of CPU,
    as much as the rest of the import). It goes to the usual __pycache__ dirs (git ignores them);
    not to a PYTHONPYCACHEPREFIX, which would also ignore the installed packages' compiled files."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


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


def pytest_collection_modifyitems(config, items):
    """Marks the cases listed in long_tests.txt as `long`, so the list lives in one file, not in each test."""
    prefixes = long_prefixes()
    for item in items:
        node = item.nodeid if item.nodeid.startswith("tests/") else f"tests/{item.nodeid}"
        if any(is_long(node, p) for p in prefixes):
            item.add_marker(pytest.mark.long)
