"""Shared fixtures: a real gateway process on free loopback ports with a temp data dir; a real S3 server."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

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


LONG_TESTS = Path(__file__).with_name("long_tests.txt")


def _long_prefixes() -> list[str]:
    """Node-id prefixes listed in tests/long_tests.txt (one per line, '#' starts a comment)."""
    lines = (line.split("#", 1)[0].strip() for line in LONG_TESTS.read_text().splitlines())
    return [line for line in lines if line]


def pytest_collection_modifyitems(config, items):
    """Marks the cases listed in long_tests.txt as `long`, so the list lives in one file, not in each test."""
    prefixes = _long_prefixes()
    for item in items:
        node = item.nodeid if item.nodeid.startswith("tests/") else f"tests/{item.nodeid}"
        if any(node == p or node.startswith(p + "::") or node.startswith(p + "[") or
               (p.endswith("/") and node.startswith(p)) for p in prefixes):
            item.add_marker(pytest.mark.long)
