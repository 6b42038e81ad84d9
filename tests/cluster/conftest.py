"""Cluster fixtures: a real etcd (Debian's etcd-server, `make setup` installs it) on free loopback
ports with a temp data dir."""
from __future__ import annotations

import shutil

import pytest

from cluster.etcd_server import EtcdServer
from gateway_process import free_port


@pytest.fixture
def etcd_server(tmp_path):
    if shutil.which("etcd") is None:
        pytest.skip("etcd not installed (make setup installs etcd-server)")
    server = EtcdServer(str(tmp_path / "etcd"), free_port(), free_port()).start()
    yield server
    server.stop()
