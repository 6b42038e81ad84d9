"""The background services of one App, all of one shape: `async def run(self, *,
task_status=trio.TASK_STATUS_IGNORED)`, started in order with `await nursery.start(...)` (each
says when it is ready) and stopped by cancelling the nursery."""
from __future__ import annotations

import logging

import trio

from store.config import ConfigWriter

log = logging.getLogger("rocketgate")

RETENTION_CHECK_INTERVAL = 60.0
WRITE_RETRY_DELAY = 1.0  # after a failed config write (EMFILE, ENOSPC, EINTR, ...)


class ConfigWriterService:
    """Writes what is submitted to the ConfigWriter from a worker thread, one batch at a time
    (submissions made during a write coalesce into the next batch). A failed write is logged
    and tried again after WRITE_RETRY_DELAY; it never ends the process. When cancelled it writes
    what is still pending, in place (shutdown)."""

    def __init__(self, writer: ConfigWriter) -> None:
        self.writer = writer
        self._wake = trio.Event()

    def _poke(self) -> None:  # ConfigWriter.on_submit: submissions come from the event loop
        self._wake.set()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        writer = self.writer
        writer.on_submit = self._poke
        if writer.submitted > writer.written:
            self._wake.set()
        task_status.started()
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                try:
                    await trio.to_thread.run_sync(writer.write_pending)
                except OSError as exc:
                    log.warning("config write failed (%s); trying again in %.0f s", exc, WRITE_RETRY_DELAY)
                    await trio.sleep(WRITE_RETRY_DELAY)
                    self._wake.set()
        finally:
            writer.on_submit = None
            write_left(writer)


def write_left(writer: ConfigWriter) -> None:
    """Write what is still pending, in place (at shutdown); a failure is logged, not raised."""
    try:
        writer.write_pending()
    except OSError as exc:
        log.error("config write at shutdown failed: %s", exc)


class Retention:
    """Deletes CommitLog files older than fileReservedTime, checked every RETENTION_CHECK_INTERVAL
    by the App's clock; on the event loop like every append (a few unlinks, under the store lock)."""

    def __init__(self, store, clock) -> None:
        self.store = store
        self.clock = clock

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.clock.sleep(RETENTION_CHECK_INTERVAL)
            deleted = self.store.delete_expired(self.clock.now_ms())
            if deleted:
                log.info("retention deleted %s", deleted)


def background_services(app) -> list:
    """In start order: the config writer first (the others submit to it while starting)."""
    return [ConfigWriterService(app.config_writer), app.durability, Retention(app.store, app.clock),
            app.offsets, app.delay, app.transactions]


async def start_services(app, nursery: trio.Nursery) -> None:
    """Start every background service of `app` in `nursery`; returns when all are ready."""
    for service in background_services(app):
        await nursery.start(service.run)
