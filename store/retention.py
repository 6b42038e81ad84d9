"""Retention (RocketMQ's CleanCommitLogService): delete CommitLog files last modified more than
`file_reserved_hours` ago, oldest first and never the one being written; the ConsumeQueues' min
offsets follow and their wholly expired files go too, as do IndexFiles that only point below.

Runs on the event loop: files are detached under the store lock (a moment), unlinked with no lock
held, and closed by the flusher when it is in the middle of a fsync (`Flusher.retire`), so the loop
never waits for a fsync.
"""
from __future__ import annotations

import logging
import os
import time

import store.faults as faults
from store.segments import unlink

log = logging.getLogger("rocketgate.store")


def delete_expired(commitlog, queues, index, lock, flusher, reserved_hours: float, now_ms: int | None = None) -> int:
    """Returns how many CommitLog files were deleted."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return delete_before(commitlog, queues, index, lock, flusher, lambda: expiry_cut(commitlog, reserved_hours, now_ms))


def delete_before(commitlog, queues, index, lock, flusher, find_cut) -> int:
    """Delete the CommitLog files below `find_cut()` (called under the lock; None: nothing) and what
    only they needed; returns how many CommitLog files went."""
    with lock:
        cut = find_cut()
        if cut is None:
            return 0
        files = commitlog.detach_before(cut)
        gone = len(files)
        files += queues.advance_min(commitlog.begin)
        index_files = index.detach_before(commitlog.begin)
    unlink(files)
    for f in index_files:
        faults.remove(f.path)
    flusher.retire([_closer(fd) for _start, fd, _path in files] + [f.close for f in index_files])
    log.info("retention: deleted %d CommitLog files, now starting at %d", gone, commitlog.begin)
    return gone


def expiry_cut(commitlog, reserved_hours: float, now_ms: int) -> int | None:
    """The end of the expired files at `now_ms` (oldest first, never the one being written), None
    when none has expired."""
    keep_ms = reserved_hours * 3600_000
    cut = None
    for start in commitlog.starts[:-1]:
        if commitlog.mtime(start) * 1000 + keep_ms < now_ms:
            cut = start + commitlog.file_size
        else:
            break
    return cut


def _closer(fd: int):
    return lambda: os.close(fd)
