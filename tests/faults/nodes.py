"""The cluster under test, each process in its own namespace: etcd on node "etcd" and gateways
g1..gN (`python -m gateway --cluster ... --node-id i`, lease TTL `ttl`, replication factor 3, flush
mode `flush`: `sync` is SYNC_MASTER for RocketMQ sends, `async` ASYNC_MASTER), started by
`ip netns exec` so SIGSTOP/SIGKILL reach the process itself.
Each gateway runs under libfaketime (Debian's faketime, LD_PRELOAD) reading its offset from
`<run dir>/g<i>.clock`, so the nemesis can jump one gateway's wall clock; the monotonic clock is left
alone (it never jumps on a real machine either). Each gateway's data dir is its own small tmpfs
(mount source `<prefix>-g<i>`), so the nemesis can fill one disk for real."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import fsync_fault
from disk import BALLAST, mount_tmpfs, unmount
from gateway.process_tree import die_with_parent
from netns import FAKETIME_LIB, Network

KAFKA_PORT, REMOTING_PORT, ETCD_PORT, ETCD_PEER = 9092, 9876, 2379, 2380
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wait_tcp(host: str, port: int, timeout: float, proc: subprocess.Popen | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


class Nodes:
    def __init__(self, net: Network, run_dir: str, gateways: int, ttl: int, replica_lag_ms: int,
                 flush: str = "sync", disk_mb: int = 256) -> None:
        self.net, self.run_dir, self.ttl, self.replica_lag_ms, self.flush = net, run_dir, ttl, replica_lag_ms, flush
        self.ids = list(range(1, gateways + 1))
        self.extra_args: list[str] = []  # more gateway options (the diskless workload's bucket)
        self.procs: dict[str, subprocess.Popen] = {}
        self.fsync_lib = fsync_fault.build(run_dir)
        for i in self.ids:
            self.set_clock(i, 0)
            fsync_fault.heal(self.fsync_trigger(i))
            mount_tmpfs(self.data_dir(i), f"{net.prefix}-g{i}", disk_mb)

    def data_dir(self, i: int) -> str:
        return os.path.join(self.run_dir, f"g{i}")

    def fsync_trigger(self, i: int) -> str:
        """While this file exists, g<i>'s fsync and fdatasync fail with EIO (fsync_fault.c)."""
        return os.path.join(self.run_dir, f"g{i}.fsync-fail")

    def set_clock(self, i: int, offset_s: int) -> None:
        """g<i>'s wall clock runs `offset_s` seconds off from now on (libfaketime rereads within 1 s)."""
        with open(os.path.join(self.run_dir, f"g{i}.clock"), "w") as f:
            f.write(f"{offset_s:+d}\n")

    def _spawn(self, node: str, cmd: list[str], env: dict | None = None) -> subprocess.Popen:
        with open(os.path.join(self.run_dir, f"{node}.log"), "ab") as log:
            proc = subprocess.Popen([*self.net.exec_prefix(node), *cmd], stdout=log, stderr=subprocess.STDOUT,
                                    cwd=CHECKOUT, preexec_fn=die_with_parent, env=env)
        self.procs[node] = proc
        return proc

    def start_etcd(self) -> None:
        a = self.net.addr["etcd"]
        client, peer = f"http://{a}:{ETCD_PORT}", f"http://{a}:{ETCD_PEER}"
        self._spawn("etcd", ["etcd", "--name", "faults", "--data-dir", os.path.join(self.run_dir, "etcd"),
                             "--listen-client-urls", client, "--advertise-client-urls", client,
                             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                             "--initial-cluster", f"faults={peer}", "--log-level", "warn"])
        if not wait_tcp(a, ETCD_PORT, 30, self.procs["etcd"]):
            raise RuntimeError("etcd did not start (see etcd.log)")

    def start_gateway(self, i: int, timeout: float = 60) -> None:
        """Start g<i>; retried while it refuses (exit 2: its old lease still holds the node id)."""
        node, a = f"g{i}", self.net.addr[f"g{i}"]
        env = {**os.environ, "LD_PRELOAD": FAKETIME_LIB, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
               "FAKETIME_TIMESTAMP_FILE": os.path.join(self.run_dir, f"{node}.clock"), "FAKETIME_CACHE_DURATION": "1"}
        env = fsync_fault.preload_env(self.fsync_lib, self.fsync_trigger(i), env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self._spawn(node, [sys.executable, "-m", "gateway", "--cluster", f"etcd://{self.net.addr['etcd']}:{ETCD_PORT}",
                                      "--node-id", str(i), "--host", a, "--advertised-host", a,
                                      "--kafka-port", str(KAFKA_PORT), "--remoting-port", str(REMOTING_PORT),
                                      "--data-dir", self.data_dir(i), "--flush", self.flush, "--commitlog-file-size", "16m",
                                      "--cluster-lease-ttl", str(self.ttl), "--default-replication-factor", "3", "--allow-anonymous",
                                      "--replica-lag-time-max-ms", str(self.replica_lag_ms), *self.extra_args], env)
            if wait_tcp(a, KAFKA_PORT, max(1.0, deadline - time.monotonic()), proc):
                return
            proc.wait()
            time.sleep(1)
        raise RuntimeError(f"{node} did not start (see {node}.log)")

    def gateway_addr(self, i: int) -> str:
        return self.net.addr[f"g{i}"]

    @property
    def kafka_addrs(self) -> dict[int, tuple[str, int]]:
        return {i: (self.gateway_addr(i), KAFKA_PORT) for i in self.ids}

    @property
    def namesrv(self) -> str:
        """Every gateway is a name server too (RocketMQ remoting)."""
        return ";".join(f"{self.gateway_addr(i)}:{REMOTING_PORT}" for i in self.ids)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.gateway_addr(i)}:{KAFKA_PORT}" for i in self.ids)

    def signal(self, i: int, sig: int) -> None:
        proc = self.procs[f"g{i}"]
        if proc.poll() is None:
            os.kill(proc.pid, sig)

    def alive(self, i: int) -> bool:
        return self.procs[f"g{i}"].poll() is None

    def _stop(self, names: list[str]) -> list[str]:
        """SIGCONT (a paused one cannot stop), SIGTERM, then SIGKILL what is left after 15 s; the
        names that had to be killed."""
        for node in names:
            proc = self.procs[node]
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.terminate()
        killed = []
        for node in names:
            try:
                self.procs[node].wait(15)
            except subprocess.TimeoutExpired:
                self.procs[node].kill()
                self.procs[node].wait()
                killed.append(node)
        return killed

    def stop_gateways(self) -> list[str]:
        """Stop every gateway, etcd left running. A clean stop writes each ConsumeQueue's buffered
        units (store/flush.py writes them at most every 0.5 s, and under `--flush sync` only when a
        write asks for a flush: the last ones stay in memory), so the stores can then be read whole.
        The gateways that had to be killed."""
        return self._stop([n for n in self.procs if n != "etcd"])

    def stop_all(self, keep_data: bool = False) -> None:
        """Every gateway, then etcd (see `_stop`).
        `keep_data`: each data dir is copied to `<run dir>/kept-g<i>` (without a disk fault's ballast)."""
        self.stop_gateways()
        if "etcd" in self.procs:
            self._stop(["etcd"])
        for i in self.ids:
            if keep_data:
                shutil.copytree(self.data_dir(i), os.path.join(self.run_dir, f"kept-g{i}"), dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns(BALLAST))
            unmount(self.data_dir(i))
