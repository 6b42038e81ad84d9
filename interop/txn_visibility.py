"""What of a Kafka transaction the readers of a queue may see (Kafka's transaction layout, docs/mapping.md
"Transactions"): a transactional batch is in its partition from produce time on, so

- the **last stable offset** of a queue is the first offset of its oldest open transaction (else the
  log end): Kafka `read_committed` consumers and every RocketMQ reader read up to it;
- a **marker** (control batch) takes one offset and is no message;
- an **aborted** transaction's records stay in the log; the per-queue aborted index (Kafka's
  `.txnindex`: producer id, first offset, marker offset) names them, Kafka clients drop them from
  Fetch's `aborted_transactions`, RocketMQ readers never see them.

One gateway process holds one store, so the table is this module's `VISIBLE` (filled by
`semantics.txn_layout`), read where a stored entry becomes RocketMQ messages (`hidden`).
"""
from __future__ import annotations

import bisect
import collections
import struct

from codec.kafka import records
from codec.kafka.schema import DecodeError
from codec.remoting.message import INNER_BATCH_FLAG

_ATTRS = struct.Struct(">h")
_PID = struct.Struct(">q")
_CONTROL_KEY = struct.Struct(">hh")  # a control record's key: version, type (0 abort, 1 commit)
_CONTROL_VALUE = struct.Struct(">hi")  # a marker's value: version, the coordinator epoch
RECENT_ENDS = 4096  # per queue: ends kept so a truncation across a commit marker reopens its transaction
MARKS_KEPT = 8  # per producer and queue: its last markers' numbers, so a cut across some keeps the one before


class TxnVisibility:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.open: dict[tuple[str, int], dict[int, int]] = {}  # queue -> {producer id: first offset}
        # queue -> producer id -> ([marker offsets], [first offsets]), in marker order
        self.aborted: dict[tuple[str, int], dict[int, tuple[list, list]]] = {}
        # queue -> the latest ends derived from the log, (marker, producer id, first offset), oldest first
        self.recent: dict[tuple[str, int], collections.deque] = {}
        # queue -> producer id -> [(coordinator epoch, offset)] of its last markers there, newest last
        # (a cluster's coordinator numbers its ends: a marker of an end at or below it is an old or
        # retried copy); the older ones are what a cut across the newest leaves
        self.marks: dict[tuple[str, int], dict[int, list[tuple[int, int]]]] = {}

    # ---- changes (semantics.txn_layout) ----
    def opened(self, topic: str, qid: int, producer_id: int, first: int) -> None:
        self.open.setdefault((topic, qid), {}).setdefault(producer_id, first)

    def is_open(self, topic: str, qid: int, producer_id: int) -> bool:
        return producer_id in self.open.get((topic, qid), ())

    def ended(self, topic: str, qid: int, producer_id: int, marker: int, commit: bool) -> int | None:
        """The transaction of `producer_id` on the queue ended with the marker at `marker`; its first
        offset (None when it was not open here)."""
        first = self.open.get((topic, qid), {}).pop(producer_id, None)
        if not self.open.get((topic, qid), True):
            del self.open[(topic, qid)]
        if first is not None and not commit:
            self.add_aborted(topic, qid, producer_id, first, marker)
        return first

    def add_aborted(self, topic: str, qid: int, producer_id: int, first: int, marker: int) -> None:
        lasts, firsts = self.aborted.setdefault((topic, qid), {}).setdefault(producer_id, ([], []))
        at = bisect.bisect(lasts, marker)
        lasts.insert(at, marker)
        firsts.insert(at, first)

    def trim(self, topic: str, qid: int, log_start: int) -> int:
        """Drop the queue's aborted transactions that end (their marker) below `log_start`: their
        records are gone with retention, as Kafka's .txnindex goes with its segment. How many went."""
        by_pid = self.aborted.get((topic, qid), {})
        dropped = 0
        for pid, (lasts, firsts) in list(by_pid.items()):
            at = bisect.bisect_left(lasts, log_start)
            del lasts[:at], firsts[:at]
            dropped += at
            if not lasts:
                del by_pid[pid]
        if not by_pid:
            self.aborted.pop((topic, qid), None)
        return dropped

    # ---- derived from the log (a cluster's replicas: docs/cluster-txn-layout.md) ----
    def appended(self, topic: str, qid: int, offset: int, m) -> None:
        """Stored entry `m` was appended to the queue at `offset`: a transactional data batch opens its
        producer's transaction there (if none is open), a marker ends it. From the batch header only."""
        if not m.sys_flag & INNER_BATCH_FLAG or len(m.body) < records.HEADER_SIZE:
            return
        attrs = _ATTRS.unpack_from(m.body, records.ATTRS_AT)[0]
        if not attrs & records.TRANSACTIONAL:
            return
        pid = _PID.unpack_from(m.body, records.PRODUCER_ID_AT)[0]
        if not attrs & records.CONTROL:
            self.opened(topic, qid, pid, offset)
            return
        commit, coordinator_epoch = _control_record(m.body)
        if commit is None:
            return
        self.marked(topic, qid, pid, coordinator_epoch, offset)
        first = self.ended(topic, qid, pid, offset, commit)
        if first is not None:
            ends = self.recent.setdefault((topic, qid), collections.deque(maxlen=RECENT_ENDS))
            ends.append((offset, pid, first))

    def marked(self, topic: str, qid: int, producer_id: int, coordinator_epoch: int, offset: int) -> None:
        kept = self.marks.setdefault((topic, qid), {}).setdefault(producer_id, [])
        kept.append((coordinator_epoch, offset))
        del kept[:-MARKS_KEPT]

    def truncate(self, topic: str, qid: int, offset: int) -> None:
        """The queue was cut back to end at `offset` (a follower's diverged suffix): what was derived
        from the cut entries is undone; a transaction whose marker was cut is open again."""
        key = (topic, qid)
        opened = self.open.get(key, {})
        for pid in [p for p, first in opened.items() if first >= offset]:
            del opened[pid]
        for pid, (lasts, firsts) in list(self.aborted.get(key, {}).items()):
            at = bisect.bisect_left(lasts, offset)
            del lasts[at:], firsts[at:]
            if not lasts:
                del self.aborted[key][pid]
        ends = self.recent.get(key, collections.deque())
        while ends and ends[-1][0] >= offset:
            _marker, pid, first = ends.pop()
            if first < offset:
                opened[pid] = first
        marks = self.marks.get(key, {})
        for pid, kept in list(marks.items()):
            while kept and kept[-1][1] >= offset:
                kept.pop()  # the marker before the cut is the last one again (if it was within MARKS_KEPT)
            if not kept:
                del marks[pid]
        for table in (self.open, self.aborted, self.marks):
            if not table.get(key, True):
                del table[key]
        if opened and key not in self.open:
            self.open[key] = opened

    def queue_state(self, topic: str, qid: int) -> dict:
        """What is derived for one queue, as plain lists (a snapshot, gateway.cluster.txn_snapshots)."""
        key = (topic, qid)
        return {"open": sorted([pid, first] for pid, first in self.open.get(key, {}).items()),
                "aborted": sorted([pid, first, last] for pid, (lasts, firsts) in self.aborted.get(key, {}).items()
                                  for first, last in zip(firsts, lasts)),
                "recent": [list(end) for end in self.recent.get(key, ())],
                "marks": sorted([pid, epoch, at] for pid, kept in self.marks.get(key, {}).items()
                                for epoch, at in kept)}

    def restore_queue(self, topic: str, qid: int, state: dict) -> None:
        """The queue's state is `state` (a `queue_state`); ValueError/TypeError if it is malformed."""
        self.forget_queue(topic, qid)
        try:
            for pid, first in state["open"]:
                self.opened(topic, qid, int(pid), int(first))
            for pid, first, last in state["aborted"]:
                self.add_aborted(topic, qid, int(pid), int(first), int(last))
            ends = [(int(marker), int(pid), int(first)) for marker, pid, first in state["recent"]]
            marks = sorted(((int(pid), int(epoch), int(at)) for pid, epoch, at in state["marks"]), key=lambda m: m[2])
            for pid, epoch, at in marks:  # in log order: each producer's newest last
                self.marked(topic, qid, pid, epoch, at)
        except (KeyError, TypeError, ValueError) as exc:
            self.forget_queue(topic, qid)
            raise ValueError(f"bad transaction state: {exc}") from None
        if ends:
            self.recent[(topic, qid)] = collections.deque(ends, maxlen=RECENT_ENDS)

    def forget_queue(self, topic: str, qid: int) -> None:
        for table in (self.open, self.aborted, self.recent, self.marks):
            table.pop((topic, qid), None)

    def forget_topic(self, topic: str) -> None:
        for table in (self.open, self.aborted, self.recent, self.marks):
            for key in [k for k in table if k[0] == topic]:
                del table[key]

    # ---- reads ----
    def last_mark(self, topic: str, qid: int, producer_id: int) -> int | None:
        """The coordinator epoch of `producer_id`'s last marker on the queue (None: none known)."""
        kept = self.marks.get((topic, qid), {}).get(producer_id)
        return kept[-1][0] if kept else None

    def stable_end(self, topic: str, qid: int, end: int, start: int = 0) -> int:
        """The last stable offset of a queue whose readable end is `end` and log start `start`: never
        below the log start, as Kafka's first unstable offset (an open transaction whose first records
        went with retention or DeleteRecords holds readers at the log start, not below it)."""
        firsts = self.open.get((topic, qid))
        return min(end, max(start, min(firsts.values()))) if firsts else end

    def is_aborted(self, topic: str, qid: int, producer_id: int, offset: int) -> bool:
        lasts, firsts = self.aborted.get((topic, qid), {}).get(producer_id, ((), ()))
        at = bisect.bisect_right(lasts, offset)  # the first of its transactions ending after `offset`
        return at < len(lasts) and firsts[at] <= offset

    def may_be_aborted(self, topic: str, qid: int, offset: int) -> bool:
        """Is `offset` inside an aborted transaction of some producer on the queue (between its first
        offset and its marker)? Then a reader that skips aborted records must look at its batch."""
        return any(self.is_aborted(topic, qid, pid, offset) for pid in self.aborted.get((topic, qid), ()))

    def aborted_in(self, topic: str, qid: int, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions with records in [start, end), for
        Fetch's `aborted_transactions` (the client drops those producers' records from each first on)."""
        out = []
        for pid, (lasts, firsts) in self.aborted.get((topic, qid), {}).items():
            at = bisect.bisect_left(lasts, start)
            out += [(pid, first) for first in firsts[at:] if first < end]
        return sorted(out, key=lambda e: e[1])

    def hidden(self, m) -> bool:
        """Is stored entry `m` (an inner batch) no message for a RocketMQ reader: a marker, an aborted
        transaction's batch, or a transactional batch above the last stable offset?"""
        if not m.sys_flag & INNER_BATCH_FLAG or len(m.body) < records.HEADER_SIZE:
            return False
        attrs = _ATTRS.unpack_from(m.body, records.ATTRS_AT)[0]
        if not attrs & records.TRANSACTIONAL:
            return False
        if attrs & records.CONTROL:
            return True
        pid = _PID.unpack_from(m.body, records.PRODUCER_ID_AT)[0]
        return (m.queue_offset >= self.stable_end(m.topic, m.queue_id, m.queue_offset + 1)
                or self.is_aborted(m.topic, m.queue_id, pid, m.queue_offset))


def _control_record(body) -> tuple[bool | None, int]:
    """(True for a commit marker, False for an abort, None for a control batch that is neither; the
    coordinator epoch in its value, 0 when it has none)."""
    try:
        [batch] = records.parse_batches(bytes(body))
        [record] = records.decode_records(batch.records_bytes(), batch.record_count)
        version, kind = _CONTROL_KEY.unpack_from(record.key or b"")
    except (ValueError, IndexError, struct.error, DecodeError):  # not a well-formed control record
        return None, 0
    value = record.value or b""
    coordinator_epoch = _CONTROL_VALUE.unpack_from(value)[1] if len(value) >= _CONTROL_VALUE.size else 0
    return ({0: False, 1: True}.get(kind) if version == 0 else None), coordinator_epoch


VISIBLE = TxnVisibility()


def queue_stable_end(store, topic: str, qid: int) -> int:
    """The last stable offset of a queue of `store` (its end when no Kafka transaction is open there)."""
    return VISIBLE.stable_end(topic, qid, store.max_offset(topic, qid), store.min_offset(topic, qid))
