"""`python -m gateway.local_cluster`: etcd and N gateways on one machine. SIGTERM and SIGINT stop the
whole tree (it used to ignore SIGTERM: the launcher died and its etcd and gateways kept their ports);
the test reaps every process of the tree even when it fails."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

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


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (Linux /proc/PID/task/TID/children)."""
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except FileNotFoundError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    kids = {int(k) for k in f.read().split()}
            except FileNotFoundError:
                continue
            todo += list(kids - found)
            found |= kids
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"  # a zombie is gone but not yet reaped
    except (FileNotFoundError, IndexError):
        return False


def port_free(port: int) -> bool:
    """Nobody listens on it (SO_REUSEADDR: connections in TIME_WAIT do not count, as for a gateway)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


@pytest.mark.skipif(shutil.which("etcd") is None, reason="etcd not installed (make setup)")
@pytest.mark.parametrize("signum, whole_group", [(signal.SIGTERM, False), (signal.SIGINT, False),
                                                 (signal.SIGINT, True)], ids=["SIGTERM", "SIGINT", "Ctrl-C"])
def test_local_cluster_starts_two_members_and_a_signal_stops_the_tree(tmp_path, signum, whole_group):
    """Ctrl-C: a terminal sends SIGINT to the launcher and its children alike."""
    kafka, remoting, etcd = pair(), pair(), pair()  # node 2 (and etcd's peer) take the next port
    proc = subprocess.Popen([sys.executable, "-m", "gateway.local_cluster", "--nodes", "2",
                             "--base-dir", str(tmp_path), "--kafka-port", str(kafka), "--remoting-port", str(remoting),
                             "--etcd-port", str(etcd)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    tree: set[int] = set()
    try:
        wait_port(kafka, 60)
        wait_port(kafka + 1, 60)
        md = AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka}"}).list_topics(timeout=10)
        for _ in range(50):
            if sorted(md.brokers) == [1, 2]:
                break
            md = AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka}"}).list_topics(timeout=10)
        assert sorted(md.brokers) == [1, 2]
        tree = descendants(proc.pid)
        assert len(tree) >= 3, tree  # etcd and two gateways
        if whole_group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0, out
        assert "node 2: kafka" in out
        # the launcher waited for its children: nothing of the tree is left, every port is free
        assert not [pid for pid in tree if alive(pid)], out
        ports = [kafka, kafka + 1, remoting, remoting + 1, etcd, etcd + 1]
        assert [p for p in ports if not port_free(p)] == []
    finally:
        tree |= descendants(proc.pid)
        for pid in [proc.pid, *tree]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.communicate(timeout=60)
