"""Durability of the CommitLog, one service per flush mode, both run by the App's nursery:
async mode flushes every 500 ms; sync mode is group commit (every appender waiting for
durability shares one fdatasync, run off the event loop)."""
from __future__ import annotations

import logging

import trio

log = logging.getLogger("rocketgate.flush")

ASYNC_FLUSH_INTERVAL = 0.5
RETRY_DELAY = 0.1  # after a failed fdatasync (EINTR, EIO, ...): reported, retried, never fatal


_failures = [0]  # consecutive failed flushes: the first is logged, and the recovery


async def flush_once(store) -> bool:
    """One store flush off the event loop; a failure is logged and False returned (the caller retries)."""
    try:
        await trio.to_thread.run_sync(store.flush)
    except OSError as exc:
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
