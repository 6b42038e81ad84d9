"""The two store calls replication needs (docs/internals.md, "Replication"): append entries copied
from a leader at the queue offsets the leader gave them, and cut a queue back to an offset (a
follower dropping a suffix that diverged from the new leader's log).

A replicated entry is appended like any other (one CommitLog write, the same dispatchers), only its
queue offset is checked instead of assigned: it must be the queue's end, so the follower's queue
stays an exact copy of the leader's (same offsets, same bodies and properties). Its CommitLog
offset and store timestamp are the follower's own.
"""
from __future__ import annotations

from codec.remoting import message as M
from store.api import AppendResult, StoreError
from store.consumequeue import UNIT_SIZE


class ReplicaGap(StoreError):
    """Replicated entries that do not continue the queue at its end (the follower must re-fetch)."""


def as_message(entry: M.StoredMessage) -> M.Message:
    """The appendable form of an entry copied from the leader (every field the layout carries)."""
    return M.Message(topic=entry.topic, queue_id=entry.queue_id, body=entry.body, properties=entry.properties,
                     flag=entry.flag, sys_flag=entry.sys_flag,
                     born_timestamp=entry.born_timestamp, born_host=entry.born_host,
                     reconsume_times=entry.reconsume_times,
                     prepared_transaction_offset=entry.prepared_transaction_offset,
                     batch_count=entry.batch_count, tags_codes=entry.tags_codes, keys=entry.keys)


def append_replicated(s, topic: str, queue_id: int, queue_offset: int,
                      entries: list[M.StoredMessage]) -> list[AppendResult]:
    """Append `entries` (the leader's, in order) to queue (topic, queue_id), whose end must be
    `queue_offset`; each entry must name this queue and continue the offsets without a gap.
    All or nothing: ReplicaGap (nothing written) when they do not continue the queue."""
    if s.max_offset(topic, queue_id) != queue_offset:
        raise ReplicaGap(f"{topic}/{queue_id}: replica ends at {s.max_offset(topic, queue_id)}, "
                         f"entries start at {queue_offset}")
    expected = queue_offset
    for e in entries:
        if e.topic != topic or e.queue_id != queue_id or e.queue_offset != expected:
            raise ReplicaGap(f"{topic}/{queue_id}: entry {e.topic}/{e.queue_id}@{e.queue_offset}, "
                             f"expected @{expected}")
        expected += e.batch_count
    if not entries:
        return []
    results = s.append_many([as_message(e) for e in entries])
    if results[0].queue_offset != queue_offset:  # cannot happen under the store lock; say so if it does
        raise StoreError(f"{topic}/{queue_id}: replicated entry stored at {results[0].queue_offset}")
    return results


def truncate_queue(s, topic: str, queue_id: int, offset: int) -> int:
    """Cut queue (topic, queue_id) back so that it ends at `offset` (no-op if it ends before);
    returns the new end. The cut entries stay in the CommitLog, unreferenced (retention removes
    them); the ConsumeQueue checkpoint is written at once past them so that a restart's replay
    does not bring them back."""
    with s._write_lock, s._lock:  # not between an append's queue offsets and its dispatch
        cq = s.consume_queues.queues.get((topic, queue_id))
        if cq is None or offset >= cq.max_offset:
            return s.max_offset(topic, queue_id)
        cq.drain()
        offset = max(offset, 0)
        cq.seg.truncate(max(offset, cq.seg.begin // UNIT_SIZE) * UNIT_SIZE)
        cq.max_offset = cq.pending_start = offset
        cq.min_offset = min(cq.min_offset, offset)
    checkpoint(s)
    return offset


def start_queue_at(s, topic: str, queue_id: int, offset: int) -> None:
    """Make queue (topic, queue_id), which ends below `offset`, an empty queue starting at `offset`:
    a follower whose leader's log now starts past the follower's end (Kafka's truncateFullyAndStartAt)."""
    with s._write_lock, s._lock:
        cq = s.consume_queues.create((topic, queue_id))
        if cq.max_offset >= offset:
            return
        cq.start_at(offset)
    checkpoint(s)


def checkpoint(s) -> None:
    """Flush the CommitLog, the ConsumeQueues and the IndexFiles and write their checkpoints now."""
    flusher = s._flusher
    with flusher.sync_lock:
        flusher.flushed_offset = s.commitlog.sync()
        if flusher.derived:
            flusher._flush_derived(force=True)
