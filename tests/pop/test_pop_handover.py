"""The POP hand-over between owners of diskless queues (semantics.pop_handover, docs/diskless.md
"Hand-over"), below the wire: two engines on two real stores holding the same queue (as two gateways
read one bucket), a hand clock. What the old one leased stays leased at the new one until the same
deadline and its receipts ack it there; what it finished is not handed out again; a lease that
expired at the old one is available at once; adopting twice changes nothing."""
from __future__ import annotations

import store
from pop_env import Clock, open_store
from semantics import pop_handover
from semantics.offsets import OffsetTable
from semantics.pop import PopEngine, Receipt

G, T = "g1", "T"


def _engine(path, clock):
    s = open_store(path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for i in range(6):
        s.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i))
    return s, PopEngine(s, OffsetTable(s), clock=clock)


def test_a_new_owner_adopts_what_was_in_flight(tmp_path):
    clock = Clock()
    s_old, old = _engine(tmp_path / "old", clock)
    s_new, new = _engine(tmp_path / "new", clock)
    try:
        first = old.acquire(G, T, 0, 3, 10_000)  # m0..m2, invisible 10 s
        clock.now += 1_000
        second = old.acquire(G, T, 0, 1, 2_000)  # m3, invisible 2 s
        assert old.ack([Receipt(G, T, 0, 1, first.pop_time)])[0] == 1
        published = pop_handover.inflight(old, lambda t: t == T)
        clock.now += 2_500  # m3's time has passed at the old owner: available again
        assert pop_handover.adopt(new, published, lambda t: t == T, clock()) == 2  # m0, m2
        assert pop_handover.adopt(new, published, lambda t: t == T, clock()) == 0  # once
        again = new.acquire(G, T, 0, 32, 10_000)
        assert [(d.offset, d.count) for d in again.deliveries] == [(3, 2), (4, 1), (5, 1)]  # not m0..m2
        assert new.ack([Receipt(G, T, 0, 0, first.pop_time)])[0] == 1  # the old owner's receipt
        assert new.ack([Receipt(G, T, 0, 3, second.pop_time)])[0] == 0  # superseded by the new delivery
        clock.now += 10_000
        assert [(d.offset, d.count) for d in new.acquire(G, T, 0, 32, 10_000).deliveries] == \
            [(2, 2), (3, 3), (4, 2), (5, 2)]  # m2 back once its time came; m0, m1 finished
    finally:
        s_old.close()
        s_new.close()


def test_delivery_counts_carry_over_so_max_deliveries_still_dead_letters(tmp_path):
    """m0 was delivered three times at the old owner; with max deliveries 4 the new owner delivers it
    once more (count 4), then dead-letters it (before: the count restarted at 1, so it came back
    four more times)."""
    clock = Clock()
    s_old, old = _engine(tmp_path / "old", clock)
    s_new, new = _engine(tmp_path / "new", clock)
    try:
        for attempt in range(3):
            clock.now += 1_000 if attempt else 0  # the last lease ran out: m0 is available again
            got = old.acquire(G, T, 0, 1, 1_000, max_deliveries=4)
            assert [(d.offset, d.count) for d in got.deliveries] == [(0, attempt + 1)]
        assert pop_handover.adopt(new, pop_handover.inflight(old, lambda t: t == T), lambda t: t == T, clock()) == 1
        clock.now += 1_000
        dead = []
        again = new.acquire(G, T, 0, 1, 1_000, max_deliveries=4, dead_letter=lambda g, m, o: dead.append(o))
        assert [(d.offset, d.count) for d in again.deliveries] == [(0, 4)]
        clock.now += 1_000
        new.acquire(G, T, 0, 1, 1_000, max_deliveries=4, dead_letter=lambda g, m, o: dead.append(o))
        assert dead == [0]
    finally:
        s_old.close()
        s_new.close()
