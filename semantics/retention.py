"""Kafka's per-topic retention (`retention.ms`, `retention.bytes`) on a shared CommitLog.

RocketMQ deletes CommitLog files by age for the whole store (`file_reserved_hours`); a topic's own
limit cannot delete bytes other topics share a file with. So the limit is logical: it moves the
topic's queues' log start offset (`store.delete_records`), as Kafka's DeleteRecords does, and
ListOffsets EARLIEST, Fetch (OFFSET_OUT_OF_RANGE below it) and every other reader start there. The
bytes themselves go when the store's file retention reaches them.

Granularity is one CommitLog entry (a Kafka record batch), not a Kafka segment: `retention.ms`
drops the entries stored before now - retention.ms (the store time, which is Kafka's
LogAppendTime); `retention.bytes` drops the oldest entries while what remains is still at least
`retention.bytes` (Kafka's rule, applied per entry instead of per segment). Only topics whose
`cleanup.policy` includes `delete` and that set one of the two configs are checked; the defaults
(72 h, unlimited) are what the store's file retention already gives.
"""
from __future__ import annotations

import logging

import trio

from codec.remoting import message
from semantics import topic_configs as tc
from semantics.diskless import is_diskless

log = logging.getLogger("rocketgate")

UNITS_PER_READ = 4096
DEFAULT_CHECK_INTERVAL_MS = 60_000


def entry_units(store, topic: str, queue_id: int, start: int, end: int):
    """(first offset, phys, bytes) of each CommitLog entry the queue's units [start, end) point at
    (the units of an inner batch share one entry)."""
    offset = start
    last_phys = None
    while offset < end:
        units = store.units(topic, queue_id, offset, min(UNITS_PER_READ, end - offset))
        if not units:
            return
        for i, (phys, size, _code) in enumerate(units):
            if phys != last_phys:
                last_phys = phys
                yield offset + i, phys, size
        offset += len(units)


def entry_sizes(store, topic: str, queue_id: int, start: int, end: int):
    """(first offset, bytes) of each CommitLog entry of the queue's units [start, end)."""
    for first, _phys, size in entry_units(store, topic, queue_id, start, end):
        yield first, size


def partition_bytes(store, topic: str, queue_id: int) -> int:
    """Bytes of the entries a queue still serves (its Kafka partition size)."""
    start, end = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
    return sum(size for _offset, size in entry_sizes(store, topic, queue_id, start, end))


def start_for_bytes(store, topic: str, queue_id: int, limit: int) -> int:
    """The log start offset that keeps the newest entries worth at least `limit` bytes, dropping
    whole entries from the front only while the rest stays at or above the limit. An entry counts
    without the store's own header (fixed fields and topic name), so what is kept is at least the
    limit in Kafka's terms: record batches (and any properties) as Kafka's log would hold them."""
    start, end = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
    overhead = message.FIXED_SIZE + len(topic.encode())
    entries = [(offset, size - overhead) for offset, size in entry_sizes(store, topic, queue_id, start, end)]
    excess = sum(size for _offset, size in entries) - limit
    for offset, size in entries:
        if size > excess:
            return offset
        excess -= size
    return end


def limits(attributes: dict) -> tuple[int, int] | None:
    """(retention.ms, retention.bytes) a topic sets, -1 for none; None when nothing is to enforce."""
    if "delete" not in tc.list_items(str(attributes.get("cleanup.policy", "delete"))):
        return None
    if "retention.ms" not in attributes and "retention.bytes" not in attributes:
        return None
    try:
        ms = int(attributes.get("retention.ms", -1))
        size = int(attributes.get("retention.bytes", -1))
    except ValueError:
        return None
    return (ms, size) if ms >= 0 or size >= 0 else None


def enforce(store, now_ms: int) -> dict[tuple[str, int], int]:
    """Apply every topic's limits once; returns {(topic, queue): new log start} for what moved."""
    moved = {}
    for name in store.topics.names():
        cfg = store.topics.get(name)
        found = limits(cfg.attributes) if cfg is not None and not is_diskless(cfg) else None
        if found is None:  # a diskless topic's retention is the janitor's (store/diskless/janitor.py)
            continue
        ms, size = found
        for qid in store.queues(name):
            low = store.min_offset(name, qid)
            start = low
            if ms >= 0:
                start = max(start, store.offset_for_timestamp(name, qid, now_ms - ms))
            if size >= 0:
                start = max(start, start_for_bytes(store, name, qid, size))
            if start > low:
                moved[(name, qid)] = store.delete_records(name, qid, start)
    return moved


class TopicRetention:
    """Runs `enforce` every `interval_ms` (Kafka's log.retention.check.interval.ms) by the App's
    clock, on the event loop (a binary search per queue for time; a walk of the queue's units for
    bytes)."""

    def __init__(self, store, clock, interval_ms: int = DEFAULT_CHECK_INTERVAL_MS) -> None:
        self.store = store
        self.clock = clock
        self.interval_ms = interval_ms

    def check(self) -> dict[tuple[str, int], int]:
        moved = enforce(self.store, self.clock.now_ms())
        for (topic, qid), start in moved.items():
            log.info("retention: %s-%d starts at offset %d", topic, qid, start)
        return moved

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.clock.sleep(self.interval_ms / 1000)
            try:
                self.check()
            except Exception:  # a bad topic must not end the service
                log.exception("topic retention check failed")
