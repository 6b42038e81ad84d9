"""Durability of the CommitLog, one service per flush mode, both run by the App's nursery:
async mode flushes every 500 ms; sync mode is group commit (every appender waiting for
durability shares one fdatasync, run off the event loop).

A flush that fails with EIO ends the gateway at once (exit 3), as Kafka halts on a failed log
dir and PostgreSQL panics on a failed fsync: Linux may drop the dirty pages of a failed
writeback and answer the next fdatasync with success, so retrying would acknowledge writes that
never reached the disk. The restart recovers from what the disk holds; in a cluster the
followers take over the queues it led. Other errors (EINTR, ENOSPC, ...) are retried."""
from __future__ import annotations

import errno
import logging
import os

import trio

log = logging.getLogger("rocketgate.flush")

ASYNC_FLUSH_INTERVAL = 0.5
RETRY_DELAY = 0.1  # after a failed fdatasync (EINTR, ENOSPC, ...): reported, retried
EXIT_DURABILITY_LOST = 3


_failures = [0]  # consecutive failed flushes: the first is logged, and the recovery


async def flush_once(store) -> bool:
    """One store flush off the event loop; a failure is logged and False returned (the caller retries)."""
    try:
        await trio.to_thread.run_sync(store.flush)
    except OSError as exc:
        if exc.errno == errno.EIO:
            durability_lost(exc)
        _failures[0] += 1
        if _failures[0] == 1:
            log.error("flush failed (%s); retrying", exc)
        return False
    if _failures[0]:
        log.warning("flush works again after %d failed tries", _failures[0])
        _failures[0] = 0
    return True


class GroupCommit:
    """Sync mode: `await durable(end_offset)` returns once the CommitLog is on disk up to `end_offset`."""

    def __init__(self, store) -> None:
        self.store = store
        self._wanted = trio.Event()
        self._done = trio.Event()

    async def durable(self, end_offset: int) -> None:
        while self.store.flushed_offset < end_offset:
            done = self._done
            self._wanted.set()
            await done.wait()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            done, self._done = self._done, trio.Event()
            ok = await flush_once(self.store)
            done.set()  # waiters not yet durable ask again
            if not ok:
                await trio.sleep(RETRY_DELAY)


class AsyncFlush:
    """Async mode: a flush every ASYNC_FLUSH_INTERVAL; nothing waits for it."""

    def __init__(self, store, clock) -> None:
        self.store = store
        self.clock = clock

    async def durable(self, end_offset: int) -> None:
        """Acknowledgements do not wait in async mode."""

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.clock.sleep(ASYNC_FLUSH_INTERVAL)
            await flush_once(self.store)


def durability_lost(exc: OSError) -> None:
    """Log why and exit now: nothing written since the last good flush may be acknowledged, and
    no later flush can prove it reached the disk (nor may a clean stop flush and checkpoint it)."""
    log.critical("flush failed with %s: what was written since the last good flush may not be on disk; "
                 "stopping now (exit %d) so that nothing more is acknowledged; a restart recovers "
                 "from the disk", exc, EXIT_DURABILITY_LOST)
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(EXIT_DURABILITY_LOST)
