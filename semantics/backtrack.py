"""Backtracking by time (回溯消费): where a group's queues of a topic move for a point in time.

Millisecond precision through the store's time lookup (`store.offset_for_timestamp`, a binary search
over the ConsumeQueue, never a scan). RocketMQ's broker rules (Broker2Client.resetOffset):
- timestamp -1 means "the end of each queue";
- a time after the newest message gives the end of the queue, one before retention the first
  message still stored (RocketMQ does not refuse either: the store lookup clamps);
- without `force` a queue only moves backwards (a later position keeps the committed offset).
Everything is computed before anything is committed, so a refused reset changes nothing.
"""
from __future__ import annotations


class ResetRefused(Exception):
    """A reset that cannot be done; `reason` is "topic" (unknown topic) or "group" (unknown group)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def offset_at_time(store, topic: str, queue_id: int, timestamp_ms: int) -> int:
    """The first offset stored at or after `timestamp_ms` (-1: the end), within [min, max]."""
    lo, hi = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
    if timestamp_ms == -1:
        return hi
    return min(max(store.offset_for_timestamp(topic, queue_id, timestamp_ms), lo), hi)


def reset_plan(store, offsets, group: str, topic: str, timestamp_ms: int, force: bool,
               group_is_live: bool = False) -> dict[int, int]:
    """{queue id: new offset} for every write queue of `topic` (RocketMQ resets writeQueueNums
    queues). Raises ResetRefused for an unknown topic, or a group that has neither a committed
    offset on the topic nor a live member."""
    cfg = store.topics.get(topic)
    if cfg is None:
        raise ResetRefused("topic", f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}")
    committed = {q: off for (t, q), off in offsets.group_offsets(group).items() if t == topic}
    if not committed and not group_is_live:
        raise ResetRefused("group", f"THe consumer group <{group}> not exist")
    plan = {}
    for qid in range(cfg.write_queues):
        target = offset_at_time(store, topic, qid, timestamp_ms)
        current = committed.get(qid)
        plan[qid] = target if force or current is None or target < current else current
    return plan


def apply_plan(offsets, group: str, topic: str, plan: dict[int, int]) -> None:
    """Commit a computed plan into the one offset table (visible to both protocols at once)."""
    for qid, offset in sorted(plan.items()):
        offsets.commit(group, topic, qid, offset)
