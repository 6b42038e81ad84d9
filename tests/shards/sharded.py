"""A real `python -m gateway --shards N` (the supervisor, its etcd and N shard processes) on free
loopback ports; stop() sends SIGTERM and reaps the whole tree even when a test failed."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient

import waiting
from gateway_process import ROOT, GatewayProcess, wait_port


def require_etcd() -> None:
    """Skip the calling test when etcd is missing: the supervisor runs a private one (make setup
    installs Debian's etcd-server, so this hides no broken install of `make setup`)."""
    if shutil.which("etcd") is None:
        pytest.skip("etcd not installed (make setup installs etcd-server)")


def wait_for(check, timeout: float = 60.0, what: str = "the condition"):
    return waiting.wait_for(check, timeout, what, interval=0.2, error=TimeoutError)


def shard_pids(data_dir: str) -> dict[int, int]:
    """Shard index -> pid of the live process serving DATA_DIR/shard-<index> (from /proc cmdlines)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
            with open(f"/proc/{entry}/stat") as f:
                if f.read().split(") ", 1)[1][0] == "Z":
                    continue
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        for i, arg in enumerate(args[:-1]):
            if arg == "--data-dir" and os.path.dirname(args[i + 1]) == data_dir:
                name = os.path.basename(args[i + 1])
                if name.startswith("shard-"):
                    found[int(name.removeprefix("shard-"))] = int(entry)
    return found


class Sharded(GatewayProcess):
    """The supervisor in place of one gateway: the same ports, bootstrap and name server."""

    def __init__(self, base: str, shards: int = 2, extra_args: list[str] | None = None) -> None:
        super().__init__(os.path.join(base, "data"), extra_args=extra_args)
        self.shards = shards
        self.log_path = os.path.join(base, "supervisor.log")

    def start(self, brokers: list[int] | None = None) -> "Sharded":
        """Until Metadata lists `brokers` (default: every shard's)."""
        cmd = [sys.executable, "-m", "gateway", "--shards", str(self.shards), "--data-dir", self.data_dir,
               "--host", "127.0.0.1", "--kafka-port", str(self.kafka_port),
               "--remoting-port", str(self.remoting_port), "--flush", self.flush, *self.extra_args]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(self.kafka_port, timeout=60, proc=self.proc)
        self.wait_brokers(brokers)
        return self

    def brokers(self) -> list[int]:
        try:
            return sorted(AdminClient({"bootstrap.servers": self.kafka_bootstrap}).list_topics(timeout=5).brokers)
        except Exception:  # not answering yet
            return []

    def wait_brokers(self, want: list[int] | None = None) -> None:
        want = want or list(range(1, self.shards + 1))
        wait_for(lambda: self.brokers() == want, what=f"Metadata to list brokers {want}")

    def stop(self, timeout: float = 40.0) -> int | None:
        """SIGTERM the supervisor; its exit status (None when it had to be killed)."""
        if self.proc is None:
            return None
        status = None
        self.terminate()  # unless stop_all sent it already
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of the tree is left
        except ProcessLookupError:
            pass
        self.proc.wait()
        for pid in shard_pids(self.data_dir).values():  # a shard started again in its own session
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return status
