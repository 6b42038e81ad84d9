"""Kafka log compaction (`cleanup.policy=compact`, `compact,delete`) on the shared CommitLog.

The CommitLog cannot be rewritten in place (every topic shares it), so a compacted partition is a
rewritten ConsumeQueue: a run of consecutive entries that lost records is copied as one new record
batch holding only the survivors, with their original offsets (gaps, as in Kafka), appended with
`store.rewrite`, which points the run's units at it. Fetch serves that batch like any stored one.
Details (crash safety, carrying live entries forward before file retention): docs/internals.md,
"Compaction".

A pass over one queue (Kafka's LogCleaner, per partition): the dirty range [clean_to, clean_end)
(clean_end: entries older than `min.compaction.lag.ms`) gives each key's latest offset; every entry
in [log start, clean_end) then keeps a record when it is its key's latest (or has no key); a
latest-version tombstone (null value) goes once its timestamp is older than `delete.retention.ms`.
A pass runs when the dirty share of the bytes reaches `min.cleanable.dirty.ratio`, the oldest dirty
entry is older than `max.compaction.lag.ms`, or some entry lives in a CommitLog file that retention
deletes within CARRY_WITHIN_MS (then every such entry is copied, changed or not).
"""
from __future__ import annotations

import dataclasses
import logging
import struct
import time

import trio

from codec.kafka import records
from codec.kafka.schema import DecodeError
from codec.remoting.message import INNER_BATCH_FLAG
from semantics import topic_configs as tc
from semantics.retention import entry_sizes, entry_units
from store.api import StoreError

log = logging.getLogger("rocketgate")

DEFAULT_BACKOFF_MS = 15_000  # Kafka's log.cleaner.backoff.ms
CARRY_WITHIN_MS = 3600_000  # copy live entries this long before their CommitLog file expires
GROUP_BYTES = 1 << 20  # survivors per rewritten batch at most (about)
DECODE_ERRORS = (DecodeError, struct.error, ValueError, IndexError)


def is_internal(topic: str) -> bool:
    """Kafka's internal topics (`__consumer_offsets`, `__transaction_state`...) start with two underscores."""
    return topic.startswith("__")


@dataclasses.dataclass
class Policy:
    dirty_ratio: float
    min_lag_ms: int
    max_lag_ms: int
    delete_retention_ms: int


def policy_of(attributes: dict) -> Policy | None:
    """The compaction settings of a topic, None when it is not compacted."""
    if "compact" not in tc.list_items(str(attributes.get("cleanup.policy", "delete"))):
        return None

    def get(name, parse):
        try:
            return parse(attributes.get(name, tc.TOPIC_CONFIGS[name].default))
        except ValueError:
            return parse(tc.TOPIC_CONFIGS[name].default)
    return Policy(get("min.cleanable.dirty.ratio", float), get("min.compaction.lag.ms", int),
                  get("max.compaction.lag.ms", int), get("delete.retention.ms", int))


@dataclasses.dataclass
class Entry:
    """One stored entry of the queue: its offsets [first, end) and its records (offset, ts, key,
    value, headers), or None when it is kept as it is (not a record batch, a control batch, damaged)."""
    first: int
    end: int
    phys: int
    size: int
    batch: records.Batch | None = None
    rows: list | None = None


@dataclasses.dataclass
class Stats:
    read_bytes: int = 0
    written_bytes: int = 0
    rewrites: int = 0
    removed: int = 0
    seconds: float = 0.0


def read_entry(store, first: int, phys: int, size: int) -> Entry:
    msg = store.get(phys)
    if msg is None or not msg.sys_flag & INNER_BATCH_FLAG:
        return Entry(first, first + 1 if msg is None else first + max(msg.batch_count, 1), phys, size)
    try:
        b = records.parse_batches(msg.body)[0]
        base = msg.queue_offset
        entry = Entry(first, base + b.last_offset_delta + 1, phys, size)
        if b.attributes & records.CONTROL or b.compression > records.ZSTD:
            return entry
        append_time = b.attributes & records.TIMESTAMP_LOG_APPEND
        entry.batch = b
        entry.rows = [(base + r.offset_delta, b.max_timestamp if append_time else b.base_timestamp + r.timestamp_delta,
                       r.key, r.value, r.headers)
                      for r in records.decode_records(b.records_bytes(), b.record_count)]
        return entry
    except DECODE_ERRORS as exc:
        log.warning("compaction: %s-%d: entry at %d kept as it is (%s)", msg.topic, msg.queue_id, phys, exc)
        return Entry(first, first + max(msg.batch_count, 1), phys, size)


def entries(store, topic: str, qid: int, start: int, end: int):
    """The queue's entries from `start` to `end`, decoded."""
    for first, phys, size in entry_units(store, topic, qid, start, end):
        yield read_entry(store, first, phys, size)


class QueueCompactor:
    """Compaction of one queue; `clean_to` (the end of the last pass) lives as long as the process."""

    def __init__(self, store, topic: str, qid: int) -> None:
        self.store, self.topic, self.qid = store, topic, qid
        self.clean_to = 0

    def clean_end(self, policy: Policy, now_ms: int) -> int:
        low, high = self.store.min_offset(self.topic, self.qid), self.store.max_offset(self.topic, self.qid)
        if policy.min_lag_ms <= 0:
            return high
        # the dirty range holds only entries no pass rewrote, in store-time order
        return max(self.store.offset_for_timestamp(self.topic, self.qid, now_ms - policy.min_lag_ms),
                   max(low, min(self.clean_to, high)))

    def due(self, policy: Policy, now_ms: int, clean_end: int) -> bool:
        low = self.store.min_offset(self.topic, self.qid)
        dirty_from = max(low, self.clean_to)
        if dirty_from >= clean_end:
            return False
        sizes = dict(entry_sizes(self.store, self.topic, self.qid, low, clean_end))
        total = sum(sizes.values())
        dirty = sum(size for first, size in sizes.items() if first >= dirty_from)
        if total and dirty / total >= policy.dirty_ratio:
            return True
        units = self.store.units(self.topic, self.qid, dirty_from, 1)
        msg = self.store.get(units[0][0]) if units else None
        return msg is not None and msg.store_timestamp < now_ms - policy.max_lag_ms

    def compact(self, policy: Policy, now_ms: int, carry_below: int, stats: Stats) -> None:
        s, topic, qid = self.store, self.topic, self.qid
        low, high = s.min_offset(topic, qid), s.max_offset(topic, qid)
        clean_end = self.clean_end(policy, now_ms)
        carry = carry_below > s.min_physical_offset and any(
            phys < carry_below for _first, phys, _size in entry_units(s, topic, qid, low, high))
        if not carry and not self.due(policy, now_ms, clean_end):
            return
        latest = {}
        for e in entries(s, topic, qid, max(low, self.clean_to), clean_end):
            for offset, _ts, key, _v, _h in e.rows or ():
                if key is not None and offset < clean_end:
                    latest[key] = offset
        tombstone_before = now_ms - policy.delete_retention_ms
        group: list[Entry] = []
        for e in entries(s, topic, qid, low, high if carry else clean_end):
            stats.read_bytes += e.size
            if e.rows is None:
                self._flush(group, stats)
                group = []
                continue
            kept = [r for r in e.rows if r[0] >= clean_end or r[2] is None
                    or (latest.get(r[2], r[0]) == r[0] and not (r[3] is None and r[1] < tombstone_before))]
            stats.removed += len(e.rows) - len(kept)
            if len(kept) == len(e.rows) and e.phys >= carry_below:
                self._flush(group, stats)
                group = []
                continue
            e.rows = kept
            if group and not self._joins(group, e):
                self._flush(group, stats)
                group = []
            group.append(e)
        self._flush(group, stats)
        self.clean_to = clean_end

    @staticmethod
    def _joins(group: list[Entry], e: Entry) -> bool:
        """Whether `e` may go into the same rewritten batch as `group` (contiguous offsets, same
        timestamp type and codec, room left)."""
        last = group[-1]
        if e.first != last.end or (e.batch.attributes ^ last.batch.attributes) & (
                records.TIMESTAMP_LOG_APPEND | records.COMPRESSION_MASK):
            return False
        if e.batch.attributes & records.TIMESTAMP_LOG_APPEND:
            return False  # one append time per batch
        return sum(len(r[3] or b"") + len(r[2] or b"") for g in group for r in g.rows) < GROUP_BYTES

    def _flush(self, group: list[Entry], stats: Stats) -> None:
        if not group:
            return
        start = max(group[0].first, self.store.min_offset(self.topic, self.qid))
        end = group[-1].end
        if start >= end:
            return
        rows = [r for e in group for r in e.rows if r[0] >= start]
        first_batch = group[0].batch
        append_time = bool(first_batch.attributes & records.TIMESTAMP_LOG_APPEND)
        base_ts = min((r[1] for r in rows), default=first_batch.max_timestamp)
        body = records.build_batch(
            [(ts, key, value, headers) for _o, ts, key, value, headers in rows], base_offset=start,
            base_timestamp=base_ts, compression=first_batch.compression, log_append_time=append_time,
            max_timestamp=first_batch.max_timestamp if append_time else None,
            offset_deltas=[r[0] - start for r in rows], last_offset_delta=end - 1 - start)
        try:
            self.store.rewrite(self.topic, self.qid, start, end, body)
        except StoreError as exc:  # log start moved meanwhile, disk full: the next pass tries again
            log.warning("compaction: %s-%d [%d, %d) not rewritten: %s", self.topic, self.qid, start, end, exc)
            return
        stats.rewrites += 1
        stats.written_bytes += len(body)


class Compactor:
    """Compacts every compacted topic's queues every `backoff_ms` (Kafka's log.cleaner.backoff.ms),
    in a worker thread (the store's reads are thread-safe; `rewrite` takes the store lock)."""

    def __init__(self, store, clock, backoff_ms: int = DEFAULT_BACKOFF_MS) -> None:
        self.store, self.clock, self.backoff_ms = store, clock, backoff_ms
        self.queues: dict[tuple[str, int], QueueCompactor] = {}
        self.totals = Stats()

    def compact_all(self, now_ms: int) -> Stats:
        began = time.monotonic()
        stats = Stats()
        carry_below = self.store.expiring_before(now_ms, CARRY_WITHIN_MS)
        compacted = []  # the topics this pass rewrote
        for name in self.store.topics.names():
            cfg = self.store.topics.get(name)
            policy = policy_of(cfg.attributes) if cfg is not None else None
            if policy is None:
                continue
            rewrites_before = stats.rewrites
            for qid in self.store.queues(name):
                q = self.queues.get((name, qid)) or self.queues.setdefault((name, qid), QueueCompactor(self.store, name, qid))
                try:
                    q.compact(policy, now_ms, carry_below, stats)
                except Exception:  # one bad queue must not stop the others
                    log.exception("compaction of %s-%d failed", name, qid)
            if stats.rewrites > rewrites_before:
                compacted.append(name)
        stats.seconds = time.monotonic() - began
        if compacted:
            # INFO for the operator's topics; the offsets topic compacts every pass a group commits
            # (a heartbeat, not news), so a pass over internal topics alone is DEBUG.
            level = logging.DEBUG if all(is_internal(name) for name in compacted) else logging.INFO
            log.log(level, "compaction of %s: %d batches rewritten, %d records removed, %.1f MB read in %.2f s",
                    ", ".join(compacted), stats.rewrites, stats.removed, stats.read_bytes / 1e6, stats.seconds)
        for field in dataclasses.fields(Stats):
            setattr(self.totals, field.name, getattr(self.totals, field.name) + getattr(stats, field.name))
        return stats

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.clock.sleep(self.backoff_ms / 1000)
            await trio.to_thread.run_sync(self.compact_all, self.clock.now_ms())
