"""Cluster fixtures: a real etcd (Debian's etcd-server, `make setup` installs it) on free loopback
ports with a temp data dir, and gateways started as members of it."""
from __future__ import annotations

import shutil

import pytest

from cluster.etcd_server import EtcdServer
from gateway_process import GatewayProcess, free_port



@pytest.fixture
def etcd_server(tmp_path):
    if shutil.which("etcd") is None:
        pytest.skip("etcd not installed (make setup installs etcd-server)")
    server = EtcdServer(str(tmp_path / "etcd"), free_port(), free_port()).start()
    yield server
    server.stop()


@pytest.fixture
def cluster_factory(tmp_path, etcd_server):
    """make(node_id, extra_args=[]) starts a gateway that joins the fixture's etcd."""
    started: list[GatewayProcess] = []

    def make(node_id: int, extra_args: list[str] | None = None, start: bool = True) -> GatewayProcess:
        args = ["--cluster", etcd_server.url, "--node-id", str(node_id), "--advertised-host", "127.0.0.1",
                "--cluster-lease-ttl", "3", *(extra_args or [])]
        g = GatewayProcess(str(tmp_path / f"node{node_id}"), extra_args=args)
        started.append(g)
        return g.start() if start else g

    yield make
    for g in started:
        g.stop()
