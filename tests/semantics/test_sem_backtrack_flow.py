"""semantics.backtrack (the offsets of a reset by time) and semantics.flow_control (when sends are
refused or throttled), on a real store and a fake clock."""
import time

import pytest

import store
from semantics import backtrack
from semantics.flow_control import PC_BUSY, SendFlowControl
from semantics.offsets import OffsetTable
from semantics_fixtures import st  # noqa: F401 (fixture)


def _fill(s, topic, n, queues=2):
    s.topics.create(topic, read_queues=queues, write_queues=queues)
    stamps = []
    for i in range(n):
        r = s.append(store.Message(topic=topic, queue_id=i % queues, body=b"m%d" % i))
        stamps.append(r.store_timestamp)
        time.sleep(0.002)  # distinct store times
    return stamps


def test_plan_follows_the_time_lookup_per_queue(st):
    stamps = _fill(st, "bt", 10)
    offsets = OffsetTable(st)
    for q in (0, 1):
        offsets.commit("g", "bt", q, 5)
    # The 7th message (queue 0, offset 3) is the first at or after its own store time.
    plan = backtrack.reset_plan(st, offsets, "g", "bt", stamps[6], force=True)
    assert plan == {0: 3, 1: st.offset_for_timestamp("bt", 1, stamps[6])}
    assert backtrack.reset_plan(st, offsets, "g", "bt", -1, force=True) == {0: 5, 1: 5}
    assert backtrack.reset_plan(st, offsets, "g", "bt", stamps[-1] + 3_600_000, force=True) == {0: 5, 1: 5}
    assert backtrack.reset_plan(st, offsets, "g", "bt", 0, force=True) == {0: 0, 1: 0}


def test_without_force_a_queue_only_moves_back(st):
    _fill(st, "bt", 10)
    offsets = OffsetTable(st)
    offsets.commit("g", "bt", 0, 1)
    offsets.commit("g", "bt", 1, 5)
    assert backtrack.reset_plan(st, offsets, "g", "bt", 0, force=False) == {0: 0, 1: 0}
    assert backtrack.reset_plan(st, offsets, "g", "bt", -1, force=False) == {0: 1, 1: 5}


def test_unknown_topic_or_group_is_refused_and_nothing_changes(st):
    _fill(st, "bt", 4)
    offsets = OffsetTable(st)
    offsets.commit("g", "bt", 0, 2)
    with pytest.raises(backtrack.ResetRefused) as e:
        backtrack.reset_plan(st, offsets, "g", "missing", 0, force=True)
    assert e.value.reason == "topic" and "no topic in this broker. topic=missing" in str(e.value)
    with pytest.raises(backtrack.ResetRefused) as e:
        backtrack.reset_plan(st, offsets, "nobody", "bt", 0, force=True)
    assert e.value.reason == "group" and str(e.value) == "THe consumer group <nobody> not exist"
    assert backtrack.reset_plan(st, offsets, "live", "bt", 0, force=True, group_is_live=True) == {0: 0, 1: 0}
    assert offsets.group_offsets("g") == {("bt", 0): 2}
    backtrack.apply_plan(offsets, "g", "bt", {0: 0, 1: 1})
    assert offsets.group_offsets("g") == {("bt", 0): 0, ("bt", 1): 1}


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_write_held_too_long_starts_a_busy_period_as_long_as_the_write():
    clock = Clock()
    flow = SendFlowControl(page_cache_busy_ms=1000, wait_in_queue_ms=200, clock=clock)

    def write(seconds):  # what the store reports of one write
        began = clock.now
        clock.now += seconds
        flow.observe(began, clock.now)
        return "stored"

    assert write(0.5) == "stored" and flow.refusal(clock.now) is None and flow.throttle_ms() == 0
    write(1.5)
    assert flow.refusal(clock.now) == PC_BUSY
    clock.now += 1.0
    assert flow.refusal(clock.now) == PC_BUSY and flow.throttle_ms() == 500
    clock.now += 0.6
    assert flow.refusal(clock.now) is None and flow.throttle_ms() == 0
    assert flow.refused == {"PC_SYNCHRONIZED": 2, "TIMEOUT_CLEAN_QUEUE": 0}


def test_a_send_that_waited_too_long_is_refused():
    clock = Clock()
    flow = SendFlowControl(page_cache_busy_ms=1000, wait_in_queue_ms=200, clock=clock)
    read_at = clock.now
    clock.now += 0.199
    assert flow.refusal(read_at) is None
    clock.now += 0.001
    assert flow.refusal(read_at, queued=3) == ("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a "
                                               "while, period in queue: 200ms, size of queue: 3")
    assert flow.refusal(None) is None
