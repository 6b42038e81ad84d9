"""`TieredStore`: the store with its remote tier behind the same read API (store.api.MessageStore).
Below a queue's local start, reads fall through to the tier (store.tier.remote), addressed as local
data is: units carry CommitLog offsets, entries keep their bytes, so Kafka Fetch, RocketMQ pull,
ListOffsets by time and msgId lookups work unchanged. Local files go only once their upload is
committed and local retention allows (store.tier.local)."""
from __future__ import annotations

import logging
import os
import time

from store.api import ReadResult
from store.objstore.api import ObjectStoreError
from store.store import LOG_STARTS, Store
from store.tier.cache import SegmentCache
from store.tier.local import delete_uploaded
from store.tier.local_bytes import LocalBytes
from store.tier.remote import RemoteLog
from store.tier.restore import align_queues, restore_if_empty
from store.tier.stats import TierStats

log = logging.getLogger("rocketgate.tier")
DEFAULT_CACHE_BYTES = 256 << 20


class TierUnreachable(ValueError):
    """An empty data dir and a tier that cannot be listed: a startup error (gateway.app)."""


class TieredStore(Store):
    def __init__(self, path: str, config=None, *, objects, cache_bytes: int = DEFAULT_CACHE_BYTES,
                 read_wait: float = 0.0) -> None:
        """`read_wait`: seconds a read waits for a tier download (store.tier.cache); 0 on an event loop,
        whose readers await downloads off the loop (gateway.tier_reads)."""
        super().__init__(path, config)
        self.objects = objects
        self.tier_stats = TierStats()
        self.cache = SegmentCache(os.path.join(path, "tiercache"), objects, cache_bytes, self.tier_stats, read_wait)
        self.remote = RemoteLog(objects, self.cache, self.tier_stats)
        self.deleted_topics: set[str] = set()  # their remote data is deleted by the upload service
        self._log_starts: dict[tuple[str, int], int] = {}  # DeleteRecords / retention.* starts (LOG_STARTS)
        self.local_bytes: LocalBytes | None = None  # per topic, for the metrics (set by recover)
        self.carry = None  # topics whose live entries a layer above writes forward (store.tier.local)

    def recover(self) -> None:
        if not self.recovered:
            try:
                self.remote.load()
            except ObjectStoreError as exc:
                if not self.commitlog.starts and not self.commitlog.end:  # it may hold this dir's data
                    raise TierUnreachable(f"the tier cannot be read ({exc}) and the data dir is empty: starting "
                                          "now could write over what the tier holds; start once it answers") from None
                log.error("tier: cannot list the object store (%s): local data is served, the tier's "
                          "once the upload service reaches it", exc)
            restore_if_empty(self)
        super().recover()
        with self._lock:
            align_queues(self)
            if self.local_bytes is None:  # from here on it sees every append; the files before, backfilled
                self.local_bytes = LocalBytes(self.commitlog.file_size, self.commitlog.end)
                self._dispatchers.append(self.local_bytes)
        for topic, queues in (self.read_config(LOG_STARTS, {}) or {}).items():
            for qid, start in queues.items():
                self._log_starts[(topic, int(qid))] = int(start)

    # ------------------------------------------------------------------ reading by queue

    def local_min_offset(self, topic: str, queue_id: int) -> int:
        """Kafka's local log start (ListOffsets EARLIEST_LOCAL)."""
        return super().min_offset(topic, queue_id)

    def _has_local(self, topic: str, queue_id: int) -> bool:
        return (topic, queue_id) in self.consume_queues.queues

    def min_offset(self, topic: str, queue_id: int) -> int:
        remote = self.remote.start(topic, queue_id)
        if remote is None:
            return super().min_offset(topic, queue_id)
        remote = max(remote, self._log_starts.get((topic, queue_id), 0))
        if not self._has_local(topic, queue_id):
            return remote
        return min(remote, super().min_offset(topic, queue_id))

    def max_offset(self, topic: str, queue_id: int) -> int:
        if self._has_local(topic, queue_id):
            return super().max_offset(topic, queue_id)
        return self.remote.end(topic, queue_id) or 0

    def queues(self, topic: str) -> list[int]:
        return sorted(set(super().queues(topic)) | set(self.remote.queues_of(topic)))

    def _remote_below(self, topic: str, queue_id: int, start: int) -> int | None:
        """The local start when `start` is below it and the tier holds offsets from `start` on."""
        local = super().min_offset(topic, queue_id) if self._has_local(topic, queue_id) else \
            (self.remote.end(topic, queue_id) or 0)
        remote = self.remote.start(topic, queue_id)
        return local if remote is not None and remote <= start < local else None

    def units(self, topic: str, queue_id: int, start: int, max_count: int) -> list[tuple[int, int, int]]:
        local = self._remote_below(topic, queue_id, start)
        if local is None or max_count <= 0:
            return super().units(topic, queue_id, start, max_count)
        out = self.remote.units(topic, queue_id, start, max_count, local)
        if len(out) < max_count and start + len(out) == local:  # short of the local start: not yet ready
            out += super().units(topic, queue_id, local, max_count - len(out))
        return out

    def entry_end(self, topic: str, queue_id: int, offset: int, phys: int, hi: int) -> int:
        if self._remote_below(topic, queue_id, offset) is None:
            return super().entry_end(topic, queue_id, offset, phys, hi)
        off = offset + 1
        while off < hi:
            units = self.units(topic, queue_id, off, min(hi - off, 4096))
            if not units:
                return hi
            for i, unit in enumerate(units):
                if unit[0] != phys:
                    return off + i
            off += len(units)
        return hi

    def read(self, topic: str, queue_id: int, start: int, max_count: int = 32, max_bytes: int = 4 << 20,
             tag_filter=None, raw: bool = False, end: int | None = None) -> ReadResult:
        local = self._remote_below(topic, queue_id, start)
        if local is None:
            result = super().read(topic, queue_id, start, max_count, max_bytes, tag_filter, raw, end)
            low = self.min_offset(topic, queue_id)
            if low < result.min_offset:
                if start < result.min_offset and start < low:
                    result.next_offset = low
                result.min_offset = low
            return result
        entries, total, off, last = [], 0, start, None
        local = local if end is None else min(local, end)
        while off < local and len(entries) < max_count:
            units = self.remote.units(topic, queue_id, off, min(256, local - off), local)
            if not units:
                break
            stop = False
            for phys, size, code in units:
                if phys == last or size <= 0 or (tag_filter is not None and not tag_filter(code)):
                    off += 1
                    continue
                if len(entries) >= max_count or (entries and total + size > max_bytes):
                    stop = True
                    break
                msg = self.remote.get(phys, self.commitlog.file_size)
                last = phys
                if msg is not None:
                    entries.append((msg.queue_offset, msg))
                    total += size
                off += 1
            if stop:
                break
        return ReadResult(entries, off, self.min_offset(topic, queue_id), self.max_offset(topic, queue_id))

    def offset_for_timestamp(self, topic: str, queue_id: int, ts_ms: int) -> int:
        local = self._remote_below(topic, queue_id, self.remote.start(topic, queue_id) or 0)
        if local is not None:
            found = self.remote.offset_for_timestamp(topic, queue_id, ts_ms)
            if found is not None and found < local:
                return found
        return super().offset_for_timestamp(topic, queue_id, ts_ms)

    def record_time_start(self, topic: str, queue_id: int, ts_ms: int, lead_ms: int) -> int | None:
        """Where a search for the first record whose timestamp is >= ts_ms (ListOffsets by time) starts
        reading, when the tier can tell: the first remote segment whose records reach ts_ms by its
        manifest (only that segment is read), or, none reaching it, the local part's start for
        ts_ms - lead_ms (a record's time leads its store time by at most that). None: no remote
        part below the local start, or a segment without record times first (the caller searches
        by store time, as before)."""
        local = self._remote_below(topic, queue_id, self.remote.start(topic, queue_id) or 0)
        if local is None:
            return None
        found = self.remote.first_reaching(topic, queue_id, ts_ms)
        if found is None or found < local:
            return found
        return max(found, super().offset_for_timestamp(topic, queue_id, max(ts_ms - lead_ms, 0)))

    def query_by_key(self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0, end_ms: int | None = None):
        """The local IndexFiles' answers, then the tier's (store.tier.remote.RemoteLog.query_by_key)."""
        end_ms = int(time.time() * 1000) + 1000 if end_ms is None else end_ms
        out = super().query_by_key(topic, key, max_num, begin_ms, end_ms)
        if len(out) < max_num:  # an IndexFile kept locally may already have found some of the tier's
            seen = {m.physical_offset for m in out}
            more = self.remote.query_by_key(topic, key, max_num, begin_ms, end_ms, self.commitlog.begin)
            out += [m for m in more if m.physical_offset not in seen][:max_num - len(out)]
        return out

    # ------------------------------------------------------------------ reading by CommitLog offset

    @property
    def min_physical_offset(self) -> int:
        """The lowest CommitLog offset still readable: the first committed file's, with a tier (POP
        and raw readers treat units below this as gone)."""
        committed = list(self.remote.manifests)
        return min(min(committed), self.commitlog.begin) if committed else self.commitlog.begin

    def read_entry(self, phys: int, size: int) -> bytes:
        if phys < self.commitlog.begin:
            return self.remote.read_entry(phys, size, self.commitlog.file_size)
        return super().read_entry(phys, size)

    def get(self, phys: int):
        if phys < self.commitlog.begin:
            return self.remote.get(phys, self.commitlog.file_size)
        return super().get(phys)

    # ------------------------------------------------------------------ retention

    def delete_expired(self, now_ms: int | None = None) -> int:
        """Local files go once uploaded and local retention allows (store.tier.local)."""
        self.topics.persist_if_dirty()
        return delete_uploaded(self, now_ms)

    def delete_records(self, topic: str, queue_id: int, offset: int) -> int:
        """DeleteRecords into the tiered part moves the log start there (the local queue is untouched);
        remote retention then deletes the segments wholly below it (store.tier.upload.expire_remote)."""
        if offset >= super().min_offset(topic, queue_id) or self.remote.start(topic, queue_id) is None:
            start = super().delete_records(topic, queue_id, offset)
        else:
            start = max(offset, self.min_offset(topic, queue_id))
            table = self.read_config(LOG_STARTS, {}) or {}
            table.setdefault(topic, {})[str(queue_id)] = start
            self.write_config(LOG_STARTS, table)
        self._log_starts[(topic, queue_id)] = start
        return start

    def _drop_topic(self, topic: str) -> None:
        for key in [k for k in self._log_starts if k[0] == topic]:
            del self._log_starts[key]
        super()._drop_topic(topic)
        self.deleted_topics.add(topic)


def open_tiered(path: str, config=None, *, objects, cache_bytes: int = DEFAULT_CACHE_BYTES,
                recover: bool = True) -> TieredStore:
    """store.open with a tier: the tier's manifests are read when the store recovers."""
    s = TieredStore(path, config, objects=objects, cache_bytes=cache_bytes)
    if recover:
        s.recover()
    return s
