"""The pop engine's log appends while the disk is slow (semantics.pop_writes): ops made in
`writes.deferred` are queued and applied, written in order by `writes.written()` on the flow's worker thread;
an op made outside (a Kafka share call) is written at once after the queued ones; no snapshot counts
an op twice. A restart replays the log to the same state."""
from __future__ import annotations

import threading

import trio

import store
from pop_env import Clock, open_store
from semantics.flow_control import SendFlowControl
from semantics.offsets import OffsetTable
from semantics.pop import PopEngine, Receipt
from semantics.pop_log import LOG_TOPIC

G, T = "g1", "T"


def _store(tmp_path):
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for i in range(10):
        s.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i))
    return s


def _leases(engine):
    state = engine.state(G, T, 0)
    return state.start, state.next, {o: (lease.count, lease.deadline, lease.pop_time) for o, lease in state.leases.items()}


def _assert_reopened_leases(tmp_path, clock, before) -> None:
    """The store opened again (a restart): a new engine, rebuilt from the pop log, holds the same leases."""
    again = open_store(tmp_path)
    try:
        assert _leases(PopEngine(again, OffsetTable(again), clock=clock)) == before
    finally:
        again.close()


def test_deferred_ops_are_queued_then_written_in_order_off_the_loop(tmp_path):
    s, clock = _store(tmp_path), Clock()
    engine = PopEngine(s, OffsetTable(s), clock=clock)
    threads = []
    log_append = engine._log.append

    def spying_append(op):
        threads.append(threading.get_ident())
        return log_append(op)
    engine._log.append = spying_append

    async def main():
        flow = SendFlowControl()
        flow.slow_until = float("inf")  # the disk is slow: appends go to the worker thread
        with engine.writes.deferred(flow):
            first = engine.acquire(G, T, 0, 4, 30_000)
        assert [d.offset for d in first.deliveries] == [0, 1, 2, 3]  # applied at once
        assert engine.writes.pending and s.max_offset(LOG_TOPIC, 0) == 0 and threads == []
        assert not engine.writes.inline(flow)
        assert not engine.snapshot()  # the state holds ops the log lacks
        with engine.writes.deferred(flow):
            second = engine.acquire(G, T, 0, 2, 30_000)
        assert [d.offset for d in second.deliveries] == [4, 5]
        # a caller that cannot wait (outside writes.deferred) is logged at once, after the queued ops
        done, end = engine.ack([Receipt(G, T, 0, 4, second.pop_time)])
        assert done == 1 and end > 0
        assert not engine.writes.pending and s.max_offset(LOG_TOPIC, 0) == 4  # init, pop, pop, ack
        with engine.writes.deferred(flow):
            engine.ack([Receipt(G, T, 0, 0, first.pop_time)])
        assert engine.writes.pending
        end = await engine.writes.written()
        assert not engine.writes.pending and s.max_offset(LOG_TOPIC, 0) == 5 and end > 0
        assert threads[-1] != threading.get_ident()  # written on the worker thread
        assert engine.snapshot()
        return _leases(engine)

    before = trio.run(main)
    s.close()
    _assert_reopened_leases(tmp_path, clock, before)


def test_a_restart_replays_queued_ops_written_later_in_their_order(tmp_path):
    """No snapshot in between: the replay alone must rebuild the state the engine had."""
    s, clock = _store(tmp_path), Clock()
    engine = PopEngine(s, OffsetTable(s), clock=clock)

    async def main():
        flow = SendFlowControl()
        flow.slow_until = float("inf")
        with engine.writes.deferred(flow):
            got = engine.acquire(G, T, 0, 3, 30_000)
            engine.ack([Receipt(G, T, 0, 1, got.pop_time)])
            engine.renew(Receipt(G, T, 0, 2, got.pop_time), 60_000)
        await engine.writes.written()
        return _leases(engine)

    before = trio.run(main)
    assert before[2] == {0: (1, 1_030_000, before[2][0][2]), 2: (1, 1_060_000, before[2][0][2])}
    s.close()
    _assert_reopened_leases(tmp_path, clock, before)


def test_while_the_disk_keeps_up_deferred_ops_are_written_at_once(tmp_path):
    s, clock = _store(tmp_path), Clock()
    engine = PopEngine(s, OffsetTable(s), clock=clock)

    async def main():
        flow = SendFlowControl()
        with engine.writes.deferred(flow):
            got = engine.acquire(G, T, 0, 2, 30_000)
        assert got.end_offset > 0 and not engine.writes.pending and s.max_offset(LOG_TOPIC, 0) == 2
    trio.run(main)
    s.close()
