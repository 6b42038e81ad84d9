"""A throttled disk for benchmarks: an ext4 filesystem on a loop device whose writes the kernel holds
to a byte rate, so a broker writing to it is slowed the way a slow disk slows it.

Two kernel knobs, both on the loop device only (no other device of the machine is touched):
- the block layer's throttle, `MAJ:MIN BYTES_PER_S` in cgroup v1's root
  `blkio.throttle.write_bps_device` (every write to the device, writeback included, since writeback
  is issued from the root cgroup); with cgroup v2 the root has no `io.max`, so `Unavailable`;
- the device's dirty page cache limit (`/sys/class/bdi/MAJ:MIN/max_bytes`, `strict_limit`), so a
  writer, `write(2)` or a store to an mmapped page (RocketMQ's CommitLog), blocks in the kernel once
  that much is waiting for the disk, instead of filling gigabytes of page cache at memory speed.
Needs root, losetup, mkfs.ext4 and mount. Everything is undone on exit (limits, mount, loop device, image).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time

from bench.scenarios import Unavailable

BLKIO_V1 = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"


def _run(*cmd: str) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Unavailable(f"{' '.join(cmd)}: {r.stderr.strip()[:200]}")
    return r.stdout.strip()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def why_unavailable() -> str | None:
    """None if this machine can make a throttled disk, else the reason."""
    if os.geteuid() != 0:
        return "needs root (loop device, mount, blkio throttle)"
    if not os.path.exists(BLKIO_V1):
        return "no cgroup v1 blkio controller (blkio.throttle.write_bps_device)"
    missing = [t for t in ("losetup", "mkfs.ext4", "mount", "umount") if shutil.which(t) is None]
    return f"missing {', '.join(missing)}" if missing else None


@contextlib.contextmanager
def throttled_disk(write_bps: int, dirty_bytes: int = 8 << 20, size_gb: int = 4, base: str = "/tmp"):
    """Yield the mount point of a fresh filesystem whose writes are held to `write_bps` bytes/s."""
    reason = why_unavailable()
    if reason:
        raise Unavailable(reason)
    work = tempfile.mkdtemp(prefix="throttled-disk-", dir=base)
    image, mnt = os.path.join(work, "disk.img"), os.path.join(work, "mnt")
    os.makedirs(mnt)
    with open(image, "wb") as f:
        f.truncate(size_gb << 30)
    loop = devno = None
    mounted = False
    try:
        loop = _run("losetup", "-f", "--show", image)
        with open(f"/sys/block/{os.path.basename(loop)}/dev") as f:
            devno = f.read().strip()
        _run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", loop)  # no background init: it would use the throttled rate
        _run("mount", loop, mnt)
        mounted = True
        bdi = f"/sys/class/bdi/{devno}"
        _write(f"{bdi}/max_bytes", str(dirty_bytes))
        _write(f"{bdi}/strict_limit", "1")
        _write(BLKIO_V1, f"{devno} {write_bps}")
        yield mnt
    finally:
        if devno is not None:
            with contextlib.suppress(OSError):
                _write(BLKIO_V1, f"{devno} 0")  # 0 removes the rule
        if mounted:
            for _ in range(20):  # a broker's process may still hold a file for a moment
                if subprocess.run(["umount", mnt], capture_output=True).returncode == 0:
                    break
                time.sleep(0.5)
        if loop is not None:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def measure_write_rate(directory: str, mib: int = 16) -> float:
    """MB/s of a sequential write of `mib` MiB plus fdatasync into `directory` (the disk as the
    brokers get it)."""
    path = os.path.join(directory, "rate-probe")
    chunk = b"\0" * (1 << 20)
    began = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(mib):
            os.write(fd, chunk)
        os.fdatasync(fd)
    finally:
        os.close(fd)
        os.unlink(path)
    return mib * (1 << 20) / 1e6 / (time.monotonic() - began)
