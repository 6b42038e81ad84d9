"""Dispatch (RocketMQ's CommitLogDispatcher): every CommitLog entry becomes one `DispatchRequest`,
and one list of dispatchers turns requests into derived data and wake-ups. The same list is fed by
live appends (right after the CommitLog write, under the store lock, on the appending thread) and
by recovery's replay of the CommitLog past the checkpoints, so what a dispatcher derives after a
crash is what it derived live.

Built in: `ConsumeQueueDispatcher` (units at the queue offset the entry records) and
`IndexDispatcher` (IndexFile keys). Others (filtered views, delay wake-ups, long-poll arrivals)
register with `Store.add_dispatcher`. A dispatcher sees requests in CommitLog order, a list at a
time (one append, or a chunk of the replay), and must be quick: it runs inside the append.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol, Sequence

from codec.remoting import message as M
from store.consumequeue import UNIT, UNIT_SIZE, ConsumeQueueTable
from store.indexfile import IndexService

log = logging.getLogger("rocketgate.store")
REWRITE = "REWRITE"  # property of an entry that re-serves existing queue offsets (Store.rewrite: compaction)


@dataclass(slots=True)
class DispatchRequest:
    """One CommitLog entry as the dispatchers see it; read-only by convention (one is built per
    entry, and a frozen dataclass costs several times as much to build). An inner batch (`count`
    > 1, or sys_flag with INNER_BATCH_FLAG) holds logical offsets queue_offset .. + count - 1."""

    topic: str
    queue_id: int
    queue_offset: int
    count: int
    physical_offset: int
    size: int
    store_timestamp: int
    sys_flag: int
    tags_codes: Sequence[int] | None  # per logical message; None: all from properties TAGS (or 0)
    keys: Sequence[str] | None  # extra index keys of an inner batch
    properties: dict

    def codes(self) -> list[int]:
        """The tags code of each logical message (what its ConsumeQueue unit carries)."""
        if self.tags_codes:
            return list(self.tags_codes)
        props = self.properties
        return [M.tags_code_of(props) if props else 0] * self.count


def request_of(msg: M.StoredMessage) -> DispatchRequest:
    """The request of an entry read back from the CommitLog (recovery)."""
    return DispatchRequest(msg.topic, msg.queue_id, msg.queue_offset, msg.batch_count, msg.physical_offset,
                           msg.size, msg.store_timestamp, msg.sys_flag, msg.tags_codes, msg.keys, msg.properties)


class Dispatcher(Protocol):
    def dispatch(self, requests: Sequence[DispatchRequest]) -> None:
        """Called with requests in CommitLog order; exceptions are logged, not raised to appenders."""


def pack_units(r: DispatchRequest) -> bytes:
    """The ConsumeQueue units of one entry: N equal units are one pack times N (the Kafka hot path)."""
    codes = r.tags_codes
    n = r.count
    if not codes:
        props = r.properties
        unit = UNIT.pack(r.physical_offset, r.size, M.tags_code_of(props) if props else 0)
        return unit * n if n != 1 else unit
    if codes.count(codes[0]) == n:
        return UNIT.pack(r.physical_offset, r.size, codes[0]) * n
    return b"".join([UNIT.pack(r.physical_offset, r.size, c) for c in codes])


class ConsumeQueueDispatcher:
    """Puts each entry's units at the queue offset the entry records. Live, that is always the
    queue's end; in a replay an entry may already be there (skipped) or past the end (the queue's
    files were lost: it restarts there; or a gap, filled with empty units)."""

    def __init__(self, queues: ConsumeQueueTable) -> None:
        self.queues = queues

    def dispatch(self, requests: Sequence[DispatchRequest]) -> None:
        """`put` never fails for I/O, so every queue's end moves with the CommitLog; creating or
        realigning a queue here (its topic was deleted since the append took its offsets) may:
        that request is logged and the others still go on to their queues."""
        queues, create = self.queues.queues, self.queues.create
        for r in requests:
            key = (r.topic, r.queue_id)
            try:
                cq = queues.get(key) or create(key)
                if r.queue_offset == cq.max_offset or self._align(cq, r):
                    cq.put(pack_units(r), r.count)
            except OSError as exc:
                log.error("dispatch: %s/%d: units of CommitLog offset %d not queued (%s); the next start "
                          "rebuilds them", r.topic, r.queue_id, r.physical_offset, exc.strerror or exc)

    def rewrite(self, r: DispatchRequest) -> None:
        """A rewrite entry (`Store.rewrite`, live or in a replay): units [queue_offset, + count) point
        at it; those a recovery cut are put again (tags code 0), as a plain entry's would be."""
        key = (r.topic, r.queue_id)
        cq = self.queues.queues.get(key) or self.queues.create(key)
        start, end = r.queue_offset, r.queue_offset + r.count
        have = cq.max_offset
        if end > have:
            lost = DispatchRequest(r.topic, r.queue_id, max(start, have), end - max(start, have), r.physical_offset,
                                   r.size, r.store_timestamp, r.sys_flag, None, None, {})
            if lost.queue_offset == have or self._align(cq, lost):
                cq.put(pack_units(lost), lost.count)
        cq.replace(start, min(end, have), r.physical_offset, r.size)

    @staticmethod
    def _align(cq, r: DispatchRequest) -> bool:
        q = r.queue_offset
        if q < cq.max_offset:
            return False  # already there (after a topic was deleted and re-created)
        if cq.max_offset == cq.min_offset:
            cq.start_at(q)
        else:
            log.warning("recovery: %s/%d: gap of %d offsets before %d", r.topic, r.queue_id, q - cq.max_offset, q)
            gap = q - cq.max_offset
            cq.put(bytes(UNIT_SIZE) * gap, gap)
        return True


class IndexDispatcher:
    """Indexes `topic#key` for KEYS tokens, UNIQ_KEY, a lite topic (RIP-83) and an inner batch's keys."""

    def __init__(self, index: IndexService) -> None:
        self.index = index

    def dispatch(self, requests: Sequence[DispatchRequest]) -> None:
        for r in requests:
            props = r.properties
            if r.keys or (props and ("KEYS" in props or "UNIQ_KEY" in props or "__LITE_TOPIC" in props)):
                keys = M.index_keys(r.topic, props, r.keys)
                if keys:
                    self.index.put(keys, r.physical_offset, r.store_timestamp)
