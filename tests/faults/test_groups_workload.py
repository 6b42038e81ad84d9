"""The consumer-group workload's own bookkeeping, on a stand-in consumer (no broker): a tick that sends
no commit is counted by its reason, and an exception that ends the thread is kept, so a short history
(seed 2612's long run: 1 commit in 31 minutes) says why it is short."""
from __future__ import annotations

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from groups import GroupWorkload  # noqa: E402


class StandIn:
    """Answers like a librdkafka consumer with `assigned` partitions none of which was consumed."""

    def __init__(self, assigned, fail_after: int | None = None) -> None:
        self.assigned, self.polls, self.fail_after = assigned, 0, fail_after

    def subscribe(self, topics):
        pass

    def poll(self, timeout):
        self.polls += 1
        if self.fail_after is not None and self.polls > self.fail_after:
            raise RuntimeError("consumer closed")
        return None

    def assignment(self):
        return self.assigned

    def position(self, partitions):
        return [type("TP", (), {"partition": p, "offset": -1001})() for p in partitions]

    def close(self):
        pass


def _run(consumer, ticks: int) -> GroupWorkload:
    w = GroupWorkload("127.0.0.1:1", "t", 3, lambda: 0.0, every_s=0.0)
    w.consumer.close()
    w.consumer = consumer
    stop = threading.Event()
    original = w._commit

    def counted() -> None:
        original()
        if sum(w.idle.values()) >= ticks:
            stop.set()
    w._commit = counted
    w._run(stop)
    return w


def test_ticks_without_a_commit_are_counted_by_reason():
    assert _run(StandIn([]), 3).diagnostics()["idle_ticks"]["unassigned"] == 3
    assert _run(StandIn([0, 1]), 2).diagnostics()["idle_ticks"]["unconsumed"] == 2


def test_an_exception_that_ends_the_thread_is_kept():
    w = _run(StandIn([], fail_after=2), 100)
    assert "consumer closed" in w.diagnostics()["producer_fatal"] and w.history == []
