"""The consumer-group workload's own bookkeeping, on a stand-in consumer (no broker): a tick that sends
no commit is counted by its reason, and an exception that ends the thread is kept, so a short history
(seed 2612's long run: 1 commit in 31 minutes) says why it is short."""
from __future__ import annotations

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
import groups  # noqa: E402
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
        if self.fail_after == -1:  # a close that never returns (a consumer stuck out of its group)
            threading.Event().wait()


def _run(consumer, ticks: int, until=None) -> GroupWorkload:
    """Run the workload's loop on `consumer` for `ticks` commit ticks (or until `until(w)`)."""
    w = GroupWorkload("127.0.0.1:1", "t", 3, lambda: 0.0, every_s=0.0)
    w.consumer.close()
    w.consumer = consumer
    stop = threading.Event()
    original = w._commit

    def counted() -> None:
        original()
        if sum(w.idle.values()) >= ticks or (until is not None and until(w)):
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


def test_a_consumer_out_of_its_group_too_long_is_replaced(monkeypatch):
    """The stuck librdkafka consumer of seed 2612 (out of its group for the rest of the run) is
    replaced by a new one with its own answer list; one briefly unassigned is kept."""
    monkeypatch.setattr(groups, "STUCK_S", 0.0)
    stuck = StandIn([])
    w = _run(stuck, 10_000, until=lambda w: w.replaced)
    try:
        assert w.replaced and w.consumer is not stuck and w.sent == 0 and w.answers == []
    finally:
        w.consumer.close()
    monkeypatch.setattr(groups, "STUCK_S", 3600.0)
    w = _run(StandIn([]), 3)
    assert not w.replaced and isinstance(w.consumer, StandIn)


def test_a_close_that_never_returns_does_not_hang_the_run():
    w = GroupWorkload("127.0.0.1:1", "t", 3, lambda: 0.0)
    w.consumer.close()
    w.consumer = StandIn([], fail_after=-1)
    w.finish(timeout=0.2)
    assert "did not close" in w.diagnostics()["unclosed"]
