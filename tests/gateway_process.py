"""A real `python -m gateway` process on free loopback ports, for tests and the compat harness.

A module with its own name (not conftest) so every test directory imports the same one."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# `make test-shards`: every GatewayProcess is `python -m gateway --shards N` (issue 25: the protocol,
# semantics, Spark and compat suites also pass with two shards); a test's own --shards wins.
TEST_SHARDS = int(os.environ.get("ROCKETGATE_TEST_SHARDS", "1"))


_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port free now and never handed out before in this process: the kernel may give the same
    ephemeral port to two binds in a row once the first socket closed (CI saw a gateway get one port for
    both its Kafka and remoting listeners)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port


WAIT_CAP_S = 180.0  # a wait scaled by the load ends after this long whatever the load (or its own bound if longer)


def _cpu_seconds(pid: int) -> float | None:
    """The user + system CPU time `pid` has used so far (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _load_factor() -> float:
    """How many times slower than on an idle machine a process runs now: the 1-minute run queue per
    core (at least 1). Other suites and helpers share the machine; a start that takes 1 s alone
    took over 20 s at load 40-80 on two cores."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


def wait_port(port: int, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    """Until `port` accepts connections; TimeoutError as soon as `proc` ended, or once `timeout`
    seconds of an unloaded machine passed: wall time is counted divided by the load factor, so a
    start slowed by other work on the machine is waited for, while one that hangs on an idle machine
    still fails after `timeout` (and after WAIT_CAP_S, or `timeout` if longer, whatever the load)."""
    start = last = time.monotonic()
    unloaded, cap = 0.0, max(timeout, WAIT_CAP_S)
    while unloaded < timeout and last - start < cap:
        if proc is not None and proc.poll() is not None:
            raise TimeoutError(f"the process ended (status {proc.returncode}) before port {port} opened")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)  # a start is ~0.5-1 s: a coarser poll adds a sizeable share
        now = time.monotonic()
        unloaded += (now - last) / _load_factor()
        last = now
    cpu = _cpu_seconds(proc.pid) if proc is not None else None
    raise TimeoutError(f"port {port} did not open in {last - start:.0f} s (load factor now {_load_factor():.1f}"
                       + (f", the process used {cpu:.1f} CPU-s)" if cpu is not None else ")"))


def wait_shards(bootstrap: str, count: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until Kafka Metadata lists `count` brokers (every shard registered), so topics spread over all,
    and each listed broker's Kafka port accepts: a shard registers before it listens, and it opens
    its listeners (Kafka, remoting, gRPC) in one step, so a route naming its gRPC or remoting
    endpoint is not refused either (a Python SDK receive was, before its listeners opened)."""
    from confluent_kafka.admin import AdminClient
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            brokers = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=3).brokers
        except Exception:  # noqa: BLE001 - not answering yet
            brokers = {}
        if len(brokers) == count:
            for broker in brokers.values():
                wait_port(broker.port, timeout=max(0.1, deadline - time.monotonic()), proc=proc)
            return
        time.sleep(0.2)
    raise TimeoutError(f"{count} shards did not show up in Metadata")


class GatewayProcess:
    """A `python -m gateway` subprocess; restartable on the same ports and data dir."""

    STOPS_SIDE_BY_SIDE = True  # stop_all signals it together with the others (see there)

    def __init__(self, data_dir: str, flush: str = "async", extra_args: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.flush = flush
        self.extra_args = extra_args or []
        self.kafka_port = free_port()
        self.remoting_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.signalled: subprocess.Popen | None = None  # the process SIGTERM was sent to
        self.log_path = os.path.join(os.path.dirname(data_dir), f"gateway-{self.kafka_port}.log")

    @property
    def kafka_bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def namesrv(self) -> str:
        return f"127.0.0.1:{self.remoting_port}"

    def start(self) -> "GatewayProcess":
        cmd = [sys.executable, "-m", "gateway", "--data-dir", self.data_dir, "--host", "127.0.0.1",
               "--kafka-port", str(self.kafka_port), "--remoting-port", str(self.remoting_port),
               "--flush", self.flush, *(["--shards", str(TEST_SHARDS)] if TEST_SHARDS > 1 else []),
               *self.extra_args]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            wait_port(self.kafka_port, timeout=60 if TEST_SHARDS > 1 else 20, proc=self.proc)
            wait_port(self.remoting_port, proc=self.proc)
            if TEST_SHARDS > 1 and "--shards" not in self.extra_args:
                wait_shards(self.kafka_bootstrap, TEST_SHARDS, self.proc)
        except BaseException as exc:  # not up (or the test was interrupted): never leave it running
            self.stop()
            if isinstance(exc, TimeoutError):
                raise RuntimeError(f"gateway did not start ({exc}):\n" + self.log()) from None
            raise
        return self

    def log(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-5000:]

    def terminate(self) -> None:
        """SIGTERM without waiting (stop() then waits), so that several gateways shut down at once;
        sent once: a second SIGTERM during the shutdown would kill the process before it flushed."""
        if self.proc is not None and self.signalled is not self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.signalled = self.proc

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        return rc

    def kill9(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> "GatewayProcess":
        self.stop()
        return self.start()


def stop_all(processes) -> None:
    """Stop every one of `processes` (anything with `stop()`), even when stopping one fails; the
    first failure is raised once all were tried. For fixtures and finally blocks. Gateways are all
    signalled first (`terminate()`), so they shut down side by side (a cut-off one waits up to 3 s to
    leave its cluster); the others (the etcd they leave on their way out) are stopped after them, in order."""
    processes = list(processes)
    for p in processes:
        if getattr(p, "STOPS_SIDE_BY_SIDE", False):
            p.terminate()
    first = None
    for p in processes:
        try:
            p.stop()
        except BaseException as exc:  # noqa: BLE001 - keep stopping the others
            first = first or exc
    if first is not None:
        raise first
