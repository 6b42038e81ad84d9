"""`python -m gateway.local_cluster`: etcd and N gateways on one machine, stopped by SIGINT."""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient

from gateway_process import ROOT, free_port, wait_port


def pair() -> int:
    """A free port whose successor is free too."""
    while True:
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue


@pytest.mark.skipif(shutil.which("etcd") is None, reason="etcd not installed (make setup)")
def test_local_cluster_starts_two_members_and_stops(tmp_path):
    kafka, remoting, etcd = pair(), pair(), pair()  # node 2 (and etcd's peer) take the next port
    proc = subprocess.Popen([sys.executable, "-m", "gateway.local_cluster", "--nodes", "2",
                             "--base-dir", str(tmp_path), "--kafka-port", str(kafka), "--remoting-port", str(remoting),
                             "--etcd-port", str(etcd)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        wait_port(kafka, 30)
        wait_port(kafka + 1, 30)
        md = AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka}"}).list_topics(timeout=10)
        for _ in range(50):
            if sorted(md.brokers) == [1, 2]:
                break
            md = AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka}"}).list_topics(timeout=10)
        assert sorted(md.brokers) == [1, 2]
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "node 2: kafka" in out
