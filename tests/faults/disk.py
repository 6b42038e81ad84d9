"""Disk faults for the fault harness: each gateway's data dir is its own small tmpfs, and `fill` takes
every free block of one of them with a ballast file, so that gateway meets a real ENOSPC (CommitLog
allocations, ConsumeQueue and checkpoint writes) until `release` deletes the ballast. Mounts are named
by the harness's prefix, so `cleanup_mounts(prefix)` unmounts what a crashed run left and nothing else."""
from __future__ import annotations

import errno
import os
import subprocess

BALLAST = "faults-ballast"
CHUNK = 1 << 20


def mount_tmpfs(path: str, source: str, size_mb: int) -> None:
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", source, path], check=True,
                   capture_output=True)


def unmount(path: str) -> None:
    subprocess.run(["umount", "-l", path], check=False, capture_output=True)


def cleanup_mounts(prefix: str) -> None:
    """Unmount every tmpfs whose source names this harness (`<prefix>-g<i>`)."""
    with open("/proc/mounts") as f:
        for line in f:
            source, target = line.split()[:2]
            if source.startswith(f"{prefix}-g"):
                unmount(target)


def fill(path: str) -> int:
    """Allocate every free block under `path` (chunk by chunk, to ENOSPC); the bytes taken."""
    ballast = os.path.join(path, BALLAST)
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
    taken = 0
    try:
        chunk = CHUNK
        while chunk >= 4096:
            try:
                os.posix_fallocate(fd, taken, chunk)
                taken += chunk
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                chunk //= 2
    finally:
        os.close(fd)
    return taken


def release(path: str) -> None:
    try:
        os.unlink(os.path.join(path, BALLAST))
    except FileNotFoundError:
        pass
