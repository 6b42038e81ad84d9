"""Durability: fdatasync of the CommitLog (group commit), and every DERIVED_FLUSH_INTERVAL the
ConsumeQueues and IndexFiles, then their checkpoints.

Each derived directory (`consumequeue/`, `index/`) holds its own `.checkpoint`: the CommitLog
offset up to which its files are complete and on disk. Deleting a directory deletes its checkpoint
too, and the next open rebuilds it from the CommitLog (store.recovery).

Threads: `flush` runs on a worker thread. `sync_lock` keeps files from being closed while they are
fsynced; files retention detached are closed here, under it (`retire`), never on the event loop
while a fsync runs. The store lock guards the ConsumeQueue buffers and the CommitLog end.
"""
from __future__ import annotations

import builtins
import logging
import os
import threading
import time

from store.config import atomic_write

log = logging.getLogger("rocketgate.store")

DERIVED_FLUSH_INTERVAL = 0.5  # seconds between ConsumeQueue/IndexFile flushes + checkpoints
CHECKPOINT = ".checkpoint"


def read_checkpoint(directory: str) -> int:
    """The checkpoint of a derived directory, -1 without one."""
    try:
        with builtins.open(os.path.join(directory, CHECKPOINT), "rb") as f:
            return int(f.read().decode())
    except (OSError, ValueError):
        return -1


class Flusher:
    def __init__(self, commitlog, queues, index, lock, sync_topics=None) -> None:
        self.commitlog = commitlog
        self.sync_topics = sync_topics  # fdatasyncs the topic journal's new records (async flush mode)
        self.queues = queues  # ConsumeQueueTable
        self.index = index  # IndexService
        self.lock = lock  # the store lock
        self.sync_lock = threading.Lock()
        self.flushed_offset = commitlog.end
        self.derived = False  # checkpoints are written only once recovery has dispatched everything
        self.closed = False
        self._last_derived = 0.0
        self._checkpointed = -1  # the offset the checkpoints last written hold
        self._retired: list = []  # close() callables of detached files
        self.derived_failures = 0  # consecutive failed checkpoint writes

    def flush(self) -> None:
        """fdatasync the CommitLog up to everything written (one call serves all waiters); every
        DERIVED_FLUSH_INTERVAL also the ConsumeQueues and IndexFiles, then the checkpoints."""
        with self.sync_lock:
            if self.closed:
                return
            self.flushed_offset = self.commitlog.sync()
            if self.sync_topics is not None:
                self.sync_topics()
            if self.derived and time.monotonic() - self._last_derived >= DERIVED_FLUSH_INTERVAL:
                self._try_flush_derived()
            self._close_retired()

    def _try_flush_derived(self) -> None:
        """The derived data and its checkpoints; a failure for a transient reason (EMFILE, ENOSPC,
        EINTR, ...) is reported once per run of failures and tried again next interval: the
        checkpoints stay where they were (recovery replays a little more), nothing is half-written."""
        try:
            self._flush_derived()
        except OSError as exc:
            self._last_derived = time.monotonic()
            self.derived_failures += 1
            if self.derived_failures == 1:
                log.error("flush: ConsumeQueue/index checkpoint write failed (%s); retrying every %.1f s",
                          exc, DERIVED_FLUSH_INTERVAL)
            return
        if self.derived_failures:
            log.warning("flush: checkpoint written again after %d failed tries", self.derived_failures)
            self.derived_failures = 0

    def _flush_derived(self, force: bool = False) -> None:
        """Called with sync_lock held. `force`: even when nothing was appended (a ConsumeQueue was
        cut back: store.replica)."""
        with self.lock:
            covered = min(self.commitlog.end, self.flushed_offset)  # every entry before it is dispatched
            if covered == self._checkpointed and not force:
                # Nothing durable appended since: the checkpoints hold `covered` already (units
                # buffered past it are written by the round that checkpoints them). An idle store,
                # as most shards of --shards N are, would otherwise sync every ConsumeQueue and
                # create, fsync and rename two files every interval.
                self._last_derived = time.monotonic()
                return
            cqs = self.queues.drain()
        for cq in cqs:
            cq.seg.sync()
        self.index.flush()
        atomic_write(os.path.join(self.queues.dir, CHECKPOINT), b"%d" % covered)
        atomic_write(os.path.join(self.index.dir, CHECKPOINT), b"%d" % covered)
        self._checkpointed = covered
        self._last_derived = time.monotonic()

    def retire(self, closers) -> None:
        """Close detached files now if no flush is running, else at the end of the running one."""
        self._retired += closers
        if self.sync_lock.acquire(blocking=False):
            try:
                self._close_retired()
            finally:
                self.sync_lock.release()

    def _close_retired(self) -> None:
        while self._retired:
            self._retired.pop()()

    def close(self, close_files) -> None:
        """Flush everything, write the checkpoints, then `close_files()`. Idempotent. A failed
        fdatasync or write (a full disk, EIO) is logged, not raised: the stop goes on, and the next
        start recovers from the checkpoints that were written."""
        with self.sync_lock:
            if self.closed:
                return
            try:
                self.flushed_offset = self.commitlog.sync()
            except OSError as exc:
                log.error("flush: CommitLog fdatasync at close failed (%s)", exc.strerror or exc)
            if self.derived:
                self._try_flush_derived()
            self.closed = True
            self._close_retired()
            with self.lock:
                close_files()
