"""Start a private single-member etcd (Debian's `etcd` binary) on loopback ports with its own data
dir: for tests and the local cluster (`python -m gateway.local_cluster`), never for production."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request

# A single member serving a few keys needs one core: without more Ps to hand work to, Go's scheduler
# does not spin looking for it; idle CPU 0.30 -> 0.22 % of a core (docs/performance.md, "Shards").
ETCD_ENV = {"GOMAXPROCS": "1"}


class EtcdServer:
    def __init__(self, data_dir: str, client_port: int, peer_port: int, binary: str = "etcd",
                 preexec_fn=None) -> None:
        self.data_dir = data_dir
        self.client_port = client_port
        self.peer_port = peer_port
        self.binary = shutil.which(binary) or binary
        self.proc: subprocess.Popen | None = None
        self.preexec_fn = preexec_fn  # e.g. the launcher's die-with-parent hook
        self.log_path = os.path.join(os.path.dirname(os.path.abspath(data_dir)), f"etcd-{client_port}.log")

    @property
    def url(self) -> str:
        """The gateway's --cluster value."""
        return f"etcd://127.0.0.1:{self.client_port}"

    def start(self, timeout: float = 20.0) -> "EtcdServer":
        client = f"http://127.0.0.1:{self.client_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        cmd = [self.binary, "--name", "rocketgate", "--data-dir", self.data_dir,
               "--listen-client-urls", client, "--advertise-client-urls", client,
               "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
               "--initial-cluster", f"rocketgate={peer}", "--initial-cluster-state", "new",
               "--log-level", "warn"]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=self.preexec_fn,
                                     env={**os.environ, **ETCD_ENV})
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(client + "/health", timeout=1) as resp:
                    if json.load(resp).get("health") == "true":
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"etcd did not start (log: {self.log_path})")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
