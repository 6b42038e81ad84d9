"""Consumer flow control (消息流控, consumer side): what a PushConsumer has pulled but not consumed
yet, per queue (the Java client's ProcessQueue), and the limits past which it stops pulling.

The Java client's defaults: at most `pullThresholdForQueue` = 1000 cached messages,
`pullThresholdSizeForQueue` = 100 MiB of cached bodies, and (concurrent consumers only) at most
`consumeConcurrentlyMaxSpan` = 2000 between the lowest and highest cached offset; over any of them
the next pull waits 50 ms (PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL) and is checked again.
"""
from __future__ import annotations

import dataclasses

MIB = 1024 * 1024


@dataclasses.dataclass
class FlowLimits:
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue: int = 100  # MiB, as in the Java client
    consume_concurrently_max_span: int = 2000
    delay_s: float = 0.05


class ProcessQueue:
    """Pulled, not yet consumed messages of one queue, by queue offset."""

    def __init__(self, next_offset: int) -> None:
        self.msgs: dict[int, object] = {}
        self.bytes = 0
        self.next_offset = next_offset  # just past the last pulled (or skipped) offset
        self.flow_controlled = False    # logged once per stretch of flow control

    def put(self, msgs: list, next_offset: int) -> None:
        for m in msgs:
            if m.queue_offset not in self.msgs:
                self.msgs[m.queue_offset] = m
                self.bytes += len(m.body)
        self.next_offset = next_offset

    def remove(self, msgs: list) -> int:
        """Drop consumed messages; the offset that is safe to commit (the lowest still cached)."""
        for m in msgs:
            if self.msgs.pop(m.queue_offset, None) is not None:
                self.bytes -= len(m.body)
        return self.commit_offset()

    def commit_offset(self) -> int:
        return min(self.msgs) if self.msgs else self.next_offset

    @property
    def count(self) -> int:
        return len(self.msgs)

    @property
    def span(self) -> int:
        return max(self.msgs) - min(self.msgs) if self.msgs else 0


def over_limit(pq: ProcessQueue, limits: FlowLimits, orderly: bool) -> str | None:
    """Why the next pull of this queue must wait (the Java client's log text), or None."""
    lo, hi = (min(pq.msgs), max(pq.msgs)) if pq.msgs else (0, 0)
    size_mib = pq.bytes / MIB
    if pq.count > limits.pull_threshold_for_queue:
        return (f"the cached message count exceeds the threshold {limits.pull_threshold_for_queue}, so do flow "
                f"control, minOffset={lo}, maxOffset={hi}, count={pq.count}, size={size_mib:.1f} MiB")
    if size_mib > limits.pull_threshold_size_for_queue:
        return (f"the cached message size exceeds the threshold {limits.pull_threshold_size_for_queue} MiB, so do "
                f"flow control, minOffset={lo}, maxOffset={hi}, count={pq.count}, size={size_mib:.1f} MiB")
    if not orderly and pq.span > limits.consume_concurrently_max_span:
        return (f"the queue's messages, span too long, so do flow control, minOffset={lo}, maxOffset={hi}, "
                f"maxSpan={pq.span}")
    return None
