"""The machine's physical limits, measured in the same run as the systems: what disk and loopback can
do at best right now, so each system's MB/s can be read as a share of it.

- disk: sequential 1 MiB `os.write`s then one `fdatasync` (a dd-like write that reaches the device);
- loopback: one TCP connection on 127.0.0.1, 1 MiB `sendall`s drained by a reader thread.
"""
from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

CHUNK = 1 << 20


def disk_write_mbps(directory: str, nbytes: int = 256 << 20) -> float:
    """MB/s of writing `nbytes` to a new file in `directory` and making it durable (fdatasync)."""
    buf = os.urandom(CHUNK)
    fd, path = tempfile.mkstemp(prefix="disk-bw-", dir=directory)
    try:
        start = time.perf_counter()
        for _ in range(max(1, nbytes // CHUNK)):
            os.write(fd, buf)
        os.fdatasync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)
    return max(1, nbytes // CHUNK) * CHUNK / elapsed / 1e6


def loopback_mbps(seconds: float = 1.0) -> float:
    """MB/s through one loopback TCP connection for about `seconds`."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        received = [0]

        def drain() -> None:
            conn, _ = server.accept()
            with conn:
                while chunk := conn.recv(CHUNK):
                    received[0] += len(chunk)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        buf = b"\0" * CHUNK
        with socket.create_connection(server.getsockname()) as out:
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                out.sendall(buf)
        reader.join(10)
        return received[0] / (time.perf_counter() - start) / 1e6


def measure(directory: str) -> dict:
    """The limits now, with the 1-minute load average (how busy the shared machine was)."""
    return {"load average": os.getloadavg()[0], "disk write MB/s": disk_write_mbps(directory),
            "loopback MB/s": loopback_mbps()}


def shares(limits: dict, best: dict[str, dict[str, float]]) -> list[str]:
    """Lines `system: produce X MB/s = p % of disk, q % of loopback; consume ...` from the best
    median MB/s per system and direction (`best[system]["produce"|"consume"]`)."""
    disk, loop = limits.get("disk write MB/s"), limits.get("loopback MB/s")
    out = []
    for system, by_dir in best.items():
        parts = []
        for direction, mbps in by_dir.items():
            share = [f"{mbps / loop:.0%} of loopback"] if loop else []
            if direction == "produce" and disk:
                share.insert(0, f"{mbps / disk:.0%} of disk write")
            parts.append(f"{direction} {mbps:,.0f} MB/s ({', '.join(share)})")
        if parts:
            out.append(f"{system}: " + "; ".join(parts))
    return out
