"""The leader's bookkeeping (semantics.replication.ReplicaManager) in process, on a fake clock: the
high watermark, the in-sync set leaving and rejoining, fencing, and the no-op on plain queues."""
from __future__ import annotations

import pytest
import trio

import store
from semantics.replication import FetchRequest, NotLeader, ReplicaManager, StaleEpoch
from semantics.replication.contract import FENCED_LEADER_EPOCH, NONE, NOT_LEADER, UNKNOWN_LEADER_EPOCH

LAG_MS = 1000


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def setup(tmp_path):
    s = store.open(str(tmp_path), store.StoreConfig(commitlog_file_size=1 << 20, index_slots=1000, index_entries=4000))
    clock = Clock()
    changes = []
    m = ReplicaManager(s, "a:1", LAG_MS, on_isr_change=lambda t, q, isr: changes.append(isr), clock=clock)
    yield s, m, clock, changes
    s.close()


def _append(s, n: int = 1) -> None:
    for _ in range(n):
        s.append(store.Message(topic="t", queue_id=0, body=b"x"))


def _fetch(m, offset: int, replica: str = "b:1", epoch: int = 1):
    return m.on_fetch(FetchRequest("t", 0, offset, epoch, replica))[0]


def test_plain_queues_are_untouched(setup):
    s, m, _, _ = setup
    _append(s, 3)
    assert m.write_refusal("t", 0) is None and m.readable_end("t", 0, 3) == 3 and not m.replicates("t", 0)
    trio.run(m.wait_replicated, "t", 0, 3)  # returns at once


def test_high_watermark_follows_the_slowest_in_sync_replica(setup):
    s, m, clock, changes = setup
    m.become_leader("t", 0, 1, ["b:1", "c:1"])
    _append(s, 5)
    assert m.readable_end("t", 0, 5) == 0
    assert _fetch(m, 3, "b:1") == NONE and _fetch(m, 5, "c:1") == NONE
    assert m.readable_end("t", 0, 5) == 3
    clock.now += LAG_MS / 1000 + 0.1  # b has not caught up for the lag time: it leaves
    m.shrink_isr()
    assert changes[-1] == ["a:1", "c:1"] and m.readable_end("t", 0, 5) == 3  # b counts until etcd holds it
    m.isr_accepted("t", 0, 1, ["a:1", "c:1"])
    assert m.readable_end("t", 0, 5) == 5
    assert _fetch(m, 5, "b:1") == NONE  # caught up: back in
    assert changes[-1] == ["a:1", "b:1", "c:1"]
    _append(s)
    assert m.readable_end("t", 0, 6) == 5  # never moves back, waits for both again


def test_a_shrink_etcd_never_accepted_completes_no_acks_all_write(setup):
    """KIP-497: the leader shrank its in-sync set but etcd (where a new leader is elected from)
    still holds the old one: the write must not be acknowledged; once this node fences itself (its
    lease may have expired) the waiting write fails instead."""
    s, m, clock, changes = setup
    fenced = False
    m.node_fenced = lambda: fenced
    m.become_leader("t", 0, 1, ["b:1"])
    _append(s, 3)
    _fetch(m, 3)
    assert m.readable_end("t", 0, 3) == 3
    _append(s)  # b is cut: it never fetches offset 3
    clock.now += LAG_MS / 1000 + 0.1
    m.shrink_isr()
    assert changes[-1] == ["a:1"] and m.readable_end("t", 0, 4) == 3
    outcome = []

    async def produce():
        async with trio.open_nursery() as nursery:
            async def wait():
                try:
                    await m.wait_replicated("t", 0, 4)
                    outcome.append("acknowledged")
                except NotLeader:
                    outcome.append("not leader")
            nursery.start_soon(wait)
            await trio.sleep(0.3)
            assert outcome == []  # still waiting for b: etcd has not accepted the shrink
            nonlocal fenced
            fenced = True
    trio.run(produce)
    assert outcome == ["not leader"] and m.readable_end("t", 0, 4) == 3
    m.isr_accepted("t", 0, 1, ["a:1"])  # even a late acceptance moves nothing while fenced
    assert m.readable_end("t", 0, 4) == 3


def test_a_caught_up_idle_follower_stays_in_sync(setup):
    s, m, clock, changes = setup
    m.become_leader("t", 0, 1, ["b:1"])
    _append(s, 2)
    _fetch(m, 2)
    clock.now += 60
    m.shrink_isr()
    assert changes == [] and m.readable_end("t", 0, 2) == 2


def test_acks_all_waits_for_the_follower(setup):
    s, m, clock, _ = setup
    m.become_leader("t", 0, 1, ["b:1"])
    _append(s, 1)
    done = []

    async def main():
        async with trio.open_nursery() as n:
            async def wait():
                await m.wait_replicated("t", 0, 1)
                done.append(True)
            n.start_soon(wait)
            await trio.sleep(0.01)
            assert not done
            _fetch(m, 1)
            await trio.sleep(0.01)
            assert done
    trio.run(main)


def test_epochs_fence(setup):
    s, m, _, _ = setup
    m.become_leader("t", 0, 2, ["b:1"])
    assert _fetch(m, 0, epoch=1) == FENCED_LEADER_EPOCH
    assert _fetch(m, 0, epoch=3) == UNKNOWN_LEADER_EPOCH  # a newer leader exists
    assert m.write_refusal("t", 0) == NOT_LEADER
    with pytest.raises(NotLeader):
        trio.run(m.wait_replicated, "t", 0, 1)
    with pytest.raises(StaleEpoch):
        m.become_leader("t", 0, 1, [])
    m.become_follower("t", 0, 3, "b:1")
    assert _fetch(m, 0, epoch=3) == NOT_LEADER
    assert m.epochs.entries("t", 0) == [(2, 0)]


def test_a_set_being_written_counts_for_the_high_watermark(setup):
    """The in-sync set being written to etcd may be elected from as soon as it lands: while it is on
    its way, acks=all waits for its followers too, even one that falls behind meanwhile (make faults
    seed 2612: the set [a, b] was written, b fell behind, a acknowledged on its own against etcd's
    older set [a], then [a, b] landed and b was elected without the records)."""
    s, m, clock, changes = setup
    m.become_leader("t", 0, 1, ["b:1"])
    m.isr_accepted("t", 0, 1, ["a:1"])  # etcd holds [a] (b was left out while not a member)
    _append(s, 2)
    assert _fetch(m, 2, "b:1") == NONE and m.readable_end("t", 0, 2) == 2  # b in this leader's own set
    m.isr_pending("t", 0, 1, ["a:1", "b:1"])  # ... and [a, b] is on its way to etcd
    clock.now += LAG_MS / 1000 + 0.1
    _append(s, 3)
    m.shrink_isr()  # b fell behind before the write landed
    assert changes[-1] == ["a:1"]
    assert m.readable_end("t", 0, 5) == 2  # before: 5, acknowledged on a alone
    m.isr_accepted("t", 0, 1, ["a:1"])  # the shrink written after it
    assert m.readable_end("t", 0, 5) == 5
