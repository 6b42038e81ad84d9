"""The data-dir lock (store.lock) with real processes: a second gateway on a data dir in use exits 2
with one line naming the directory and the holder's PID (two gateways on one store used to both
accept writes, and a restart kept only one's records); `python -m security` writing offline holds
it against a gateway start; a `kill -9`ed holder never blocks a restart."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from acked_records import produce_acked, read_topic
from gateway_process import ROOT, GatewayProcess, free_port
from store.lock import DataDirLocked, acquire


def run_gateway(data_dir: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """A second `python -m gateway` on other ports; subprocess.run kills it if it does not exit."""
    return subprocess.run([sys.executable, "-m", "gateway", "--data-dir", data_dir, "--host", "127.0.0.1",
                           "--kafka-port", str(free_port()), "--remoting-port", str(free_port())],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def assert_refused(r: subprocess.CompletedProcess, data_dir: str, holder: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocketgate: error: "), r.stderr
    assert repr(data_dir) in lines[0] and holder in lines[0], lines[0]


def test_second_gateway_is_refused_and_acknowledged_records_survive(tmp_path):
    g = GatewayProcess(str(tmp_path / "data"), flush="sync")
    try:
        g.start()
        topic = f"lock{uuid.uuid4().hex[:8]}"
        acked = produce_acked(g.kafka_bootstrap, topic, 100, b"first")
        assert_refused(run_gateway(g.data_dir), g.data_dir, f"gateway (PID {g.proc.pid})")
        acked += produce_acked(g.kafka_bootstrap, topic, 100, b"after")
        g.restart()
        assert sorted(read_topic(g.kafka_bootstrap, topic)) == sorted(acked)
    finally:
        g.stop()


def test_kill9_holder_does_not_block_a_restart(tmp_path):
    g = GatewayProcess(str(tmp_path / "data"), flush="sync")
    try:
        g.start()
        topic = f"lock{uuid.uuid4().hex[:8]}"
        acked = produce_acked(g.kafka_bootstrap, topic, 50)
        g.kill9()
        g.start()  # the kernel dropped the dead process's lock
        assert sorted(read_topic(g.kafka_bootstrap, topic)) == sorted(acked)
        assert_refused(run_gateway(g.data_dir), g.data_dir, f"gateway (PID {g.proc.pid})")
    finally:
        g.stop()


def test_security_tool_writes_live_next_to_a_running_gateway(tmp_path):
    """Gateway first: the tool's change is a live one (the gateway re-reads the files), it says so."""
    g = GatewayProcess(str(tmp_path / "data"))
    try:
        g.start()
        r = subprocess.run([sys.executable, "-m", "security", "--data-dir", g.data_dir, "user", "set", "alice",
                            "--password", "pw"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert f"gateway (PID {g.proc.pid})" in r.stderr and "live" in r.stderr
    finally:
        g.stop()


def test_gateway_is_refused_while_the_security_tool_writes_offline(tmp_path):
    """Tool first: while `python -m security` changes the files of a stopped gateway, a gateway
    start is refused. The tool is held mid-change deterministically: the credential file it reads
    first is a FIFO, whose open blocks until the test writes into it."""
    data_dir = str(tmp_path / "data")
    os.makedirs(os.path.join(data_dir, "config"))
    fifo = os.path.join(data_dir, "config", "credentials.json")
    os.mkfifo(fifo)
    tool = subprocess.Popen([sys.executable, "-m", "security", "--data-dir", data_dir, "user", "set", "alice",
                             "--password", "pw"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_holder(data_dir, tool)
        assert_refused(run_gateway(data_dir), data_dir, f"python -m security (PID {tool.pid})")
        with open(fifo, "wb") as f:  # lets the tool read an empty store and finish its change
            f.write(b"{}")
        assert tool.wait(60) == 0, tool.stderr.read()
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
        tool.stdout.close()
        tool.stderr.close()
    g = GatewayProcess(data_dir)
    try:
        g.start()  # the tool is done: the lock is free
    finally:
        g.stop()


def _wait_for_holder(data_dir: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with acquire(data_dir, shared=True):
                pass
        except DataDirLocked as exc:
            if f"PID {proc.pid}" in str(exc):
                return
        except FileNotFoundError:
            pass
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the tool never took the lock"
        time.sleep(0.05)


def test_lock_api_shared_and_exclusive(tmp_path):
    """Readers share the lock; a writer excludes them and they it; one line names the directory."""
    d = str(tmp_path)
    with acquire(d, shared=True), acquire(d, shared=True):
        with pytest.raises(DataDirLocked) as info:
            acquire(d)
        assert repr(d) in str(info.value) and f"PID {os.getpid()}" in str(info.value)
    with acquire(d, what="store rebuild"):
        with pytest.raises(DataDirLocked, match=rf"store rebuild \(PID {os.getpid()}\)"):
            acquire(d, shared=True)
    acquire(d).release()  # released: free again
