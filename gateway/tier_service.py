"""The tier's background work (store.tier.upload): each round runs on a worker thread so produce and
fetch never wait on the object store; a failed round (store down, slow, throttled) is retried with
exponential backoff while the gateway keeps serving local data and deleting nothing uncommitted.
Local deletion runs on its own beside the rounds, so a hung store does not hold it up."""
from __future__ import annotations

import logging

import trio

from store.objstore.api import ObjectStoreError
from store.tier.upload import Uploader, pending_files

log = logging.getLogger("rocketgate.tier")

ROUND_INTERVAL = 1.0  # seconds between rounds when all went well
BACKOFF_MAX = 30.0


class TierService:
    def __init__(self, store, bytes_per_second: int | None, interval: float = ROUND_INTERVAL) -> None:
        """`bytes_per_second`: the uploads' bound (--remote-log-manager-copy-max-bytes-per-second)."""
        self.store = store
        self.interval = interval
        self.uploader = Uploader(store, bytes_per_second)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._delete_locally)
            task_status.started()
            await self._upload()

    async def _upload(self) -> None:
        delay = self.interval
        while True:
            try:
                await trio.to_thread.run_sync(self.uploader.round, abandon_on_cancel=True)
                delay = self.interval
            except ObjectStoreError as exc:
                self.store.tier_stats.error("upload")
                delay = min(BACKOFF_MAX, max(self.interval, delay * 2))
                log.warning("tier: object store: %s; retrying in %.0f s", exc, delay)
            except Exception:  # a bug must not end the service (nor delete anything: nothing is committed)
                self.store.tier_stats.error("upload")
                delay = min(BACKOFF_MAX, max(self.interval, delay * 2))
                log.exception("tier: upload round failed; retrying in %.0f s", delay)
            await trio.sleep(delay)

    async def _delete_locally(self) -> None:
        """Local retention every interval, on its own: committed files whose local.retention.ms
        passed go while a round waits on an object store that is down or hung (up to the S3
        client's timeouts, then the backoff), which is when the disk fills (store.tier.local)."""
        while True:
            await trio.sleep(self.interval)
            try:
                self.store.delete_expired()
            except Exception:  # retention must go on; the store's own Retention service also runs it
                log.exception("tier: local deletion failed")


def tier_metrics(app, gauge, counter):
    """The tier's metric families (gateway.ops.collector), none without a tier."""
    st = app.store
    stats = getattr(st, "tier_stats", None)
    if stats is None:
        return
    remote = {}
    for topic, qid in st.remote.queue_keys():
        for ref in st.remote.live(topic, qid):
            remote[topic] = remote.get(topic, 0) + ref.size
    yield gauge("tier_remote_bytes", "Bytes of committed segment objects per topic in the tier (Kafka's "
                "RemoteLogSizeBytes).", ("topic",), (((t,), n) for t, n in remote.items()))
    local = st.local_bytes.by_topic(list(st.commitlog.starts)) if st.local_bytes is not None else {}
    yield gauge("tier_local_bytes", "Bytes of each topic's entries in the local CommitLog files (Kafka's local "
                "log size).", ("topic",), (((t,), n) for t, n in local.items()))
    yield counter("tier_uploaded_bytes", "Segment bytes uploaded per topic.", ("topic",),
                  (((t,), n) for t, n in stats.uploaded_bytes.items()))
    yield counter("tier_remote_read_bytes", "Segment bytes downloaded per topic (read-cache misses).", ("topic",),
                  (((t,), n) for t, n in stats.remote_read_bytes.items()))
    yield counter("tier_errors", "Tier failures by kind: upload (a round failed), checksum (a segment not "
                  "served), manifest (unreadable).", ("kind",), (((k,), n) for k, n in stats.errors.items()))
    pending = len(pending_files(st))  # counted now: a round waiting on a store that is down counts nothing
    yield gauge("tier_upload_lag_files", "Sealed CommitLog files not yet committed to the tier.",
                samples=[((), pending)])
    yield gauge("tier_upload_lag_bytes", "Bytes of sealed CommitLog files not yet committed to the tier.",
                samples=[((), pending * st.commitlog.file_size)])
    yield gauge("tier_read_cache_bytes", "Bytes in the tier's on-disk read cache.",
                samples=[((), st.cache.cached_bytes())])
