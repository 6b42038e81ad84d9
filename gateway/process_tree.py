"""What a launcher of gateway processes needs (gateway.local_cluster, gateway.shards): children that
die with it, SIGTERM/SIGINT as a flag, and stopping the whole tree (the gateways together, then etcd)."""
from __future__ import annotations

import ctypes
import signal
import socket
import subprocess
import time

from cluster.etcd_server import EtcdServer

STOP_TIMEOUT = 15.0  # the gateways get this long (together) to stop on SIGTERM, then are killed
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGTERM when the launcher dies, even by kill -9 (Linux prctl)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: SIGTERM/SIGINT of the launcher still stop the tree


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Stop:
    """SIGTERM and SIGINT set a flag instead of raising, so no start or stop is cut in half."""

    def __init__(self) -> None:
        self.signal: int | None = None
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._set)

    def _set(self, signum, _frame) -> None:
        self.signal = signum

    def sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; whether a stop was asked for."""
        if self.signal is None:
            time.sleep(seconds)
        return self.signal is not None


def stop_all(gateways: list[subprocess.Popen], etcd: EtcdServer | None, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM every gateway, wait for them together (killing what is left after `timeout`), then etcd."""
    for g in gateways:
        if g.poll() is None:
            g.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for g in gateways:
        try:
            g.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            g.kill()
            g.wait()
    if etcd is not None:
        etcd.stop()
