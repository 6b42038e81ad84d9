"""Flush services: a background flush every 500 ms in async mode, and group commit in sync mode
(every appender waiting for durability shares one fdatasync, run off the event loop)."""
from __future__ import annotations

import logging

import trio

log = logging.getLogger("rocketgate.flush")

ASYNC_FLUSH_INTERVAL = 0.5


class GroupCommit:
    """`await durable(end_offset)` returns once the CommitLog is on disk up to `end_offset`."""

    def __init__(self, store) -> None:
        self.store = store
        self._wanted = trio.Event()
        self._done = trio.Event()

    async def durable(self, end_offset: int) -> None:
        while self.store.flushed_offset < end_offset:
            done = self._done
            self._wanted.set()
            await done.wait()

    async def run(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            done, self._done = self._done, trio.Event()
            await trio.to_thread.run_sync(self.store.flush)
            done.set()


async def run_async_flush(store) -> None:
    while True:
        await trio.sleep(ASYNC_FLUSH_INTERVAL)
        await trio.to_thread.run_sync(store.flush)
