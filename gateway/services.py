"""The background services of one App, all of one shape: `async def run(self, *,
task_status=trio.TASK_STATUS_IGNORED)`, started in order with `await nursery.start(...)` (each
says when it is ready) and stopped by cancelling the nursery."""
from __future__ import annotations

import logging

import trio

from gateway.cluster.service import ClusterService
from gateway.diskless import JanitorService, TopicWatch
from gateway.diskless_configs import RetentionSync
from gateway.kafka.describe_producers import ProducerExpiry
from gateway.lite_expiry import LiteExpiry
from gateway.tier_service import TierService
from semantics.compaction import Compactor
from semantics.retention import TopicRetention
from store.config import ConfigWriter

log = logging.getLogger("rocketgate")

RETENTION_CHECK_INTERVAL = 60.0
WRITE_RETRY_DELAY = 1.0  # after a failed config write (EMFILE, ENOSPC, EINTR, ...)


class ConfigWriterService:
    """The App's one writer of config documents: `submit(name, obj)` (from the event loop) queues
    a document and returns its number; `run` writes the queue from a worker thread, one batch at
    a time (submissions made during a write coalesce into the next batch); `await written(name,
    n)` returns once that submission is on disk. A failed write is logged and tried again after
    WRITE_RETRY_DELAY; it never ends the process. When cancelled it writes what is still
    pending, in place (shutdown)."""

    def __init__(self, writer: ConfigWriter) -> None:
        self.writer = writer
        self._wake = trio.Event()
        self._progress = trio.Event()  # set (and replaced) after every batch
        self._failed_batch: trio.Event | None = None  # the progress event of the last failed batch
        self._running = False

    def submit(self, name: str, obj) -> int:
        number = self.writer.submit(name, obj)
        self._wake.set()
        return number

    def written_already(self, name: str, number: int) -> bool:
        """Submission `number` of `name` is on disk."""
        return self.writer.is_written(name, number)

    async def written(self, name: str, number: int, until_failure: bool = False) -> None:
        """Wait until submission `number` of `name` is on disk (written in place when the service
        is not running). With `until_failure`, also return when a write attempt fails: the
        document stays pending and is retried, the caller goes on with it kept in memory."""
        while not self.writer.is_written(name, number):
            if not self._running:
                try:
                    self.writer.write_pending()
                except OSError:
                    if not until_failure:
                        raise
                return
            progress = self._progress
            await progress.wait()
            if until_failure and self._failed_batch is progress:
                return

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        writer = self.writer
        self._running = True
        if writer.has_pending():
            self._wake.set()
        task_status.started()
        try:
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                failed = None
                try:
                    await trio.to_thread.run_sync(writer.write_pending)
                except OSError as exc:
                    failed = exc
                done, self._progress = self._progress, trio.Event()
                if failed is not None:
                    self._failed_batch = done
                done.set()  # for the documents that were written
                if failed is not None:
                    log.warning("config write failed (%s); trying again in %.0f s", failed, WRITE_RETRY_DELAY)
                    await trio.sleep(WRITE_RETRY_DELAY)
                    self._wake.set()
        finally:
            self._running = False
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
    """In start order: the config writer first (the others submit to it while starting), the
    cluster service (a member's lease and watch) before those that create topics."""
    cluster = [ClusterService(app)] if app.ownership.clustered else []
    tier = [TierService(app.store, bytes_per_second=app.config.remote_log_manager_copy_max_bytes_per_second)] \
        if getattr(app.store, "tier_stats", None) is not None else []
    return [app.config_writer, *cluster, app.durability, Retention(app.store, app.clock),
            TopicRetention(app.store, app.clock, app.config.log_retention_check_interval_ms),
            Compactor(app.store, app.clock, app.config.log_cleaner_backoff_ms),
            ProducerExpiry(app.kafka.producers, app.clock, app.config.producer_id_expiration_ms), LiteExpiry(app),
            app.offsets, app.delay, app.transactions, app.pop, app.kafka.coordinator, app.kafka.consumer_groups,
            app.kafka.share_groups, app.kafka.streams_groups, app.replication, app.tables, *tier,
            *([TopicWatch(app.store, app.diskless, view=app.ownership.view if cluster else None), JanitorService(app), app.kafka.diskless_txns, RetentionSync(app),
               app.pop_remoting.owner]
              if app.diskless is not None else [])]


async def start_services(app, nursery: trio.Nursery) -> None:
    """Start every background service of `app` in `nursery`; returns when all are ready."""
    app.stats.install(app)
    for service in background_services(app):
        await nursery.start(service.run)
