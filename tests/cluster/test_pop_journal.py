"""The pop journal in process (semantics.replication.pop_journal): two stores stand for a queue's
leader and its follower; the follower's copy of the queue and of its journal is made as the
replication fetch makes it (`append_replicated` of the leader's entries). The follower taking the
queue over rebuilds every group's POP state: acknowledged records never again, in-flight ones after
their deadline, the rest at once."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import trio

import store
from cluster.etcd import EtcdError
from cluster.model import QueueAssignment
from gateway.cluster.replicas import ReplicaRoles
from semantics.offsets import OffsetTable
from semantics.pop import PopEngine, Receipt
from semantics.pop_carry import PopCarry
from semantics.pop_log import LOG_TOPIC
from semantics.replication import ReplicaManager
from semantics.replication.pop_journal import PopJournal, journal_topic

T, G = "orders", "g"
JOURNAL = journal_topic(T)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class Node:
    """One gateway's store, replica manager and pop engine, with the journal wired as in a cluster."""

    def __init__(self, path, name: str, clock) -> None:
        self.store = store.open(str(path / name), store.StoreConfig(commitlog_file_size=1 << 20, cq_units_per_file=1000))
        self.store.topics.create(T, read_queues=1, write_queues=1)
        self.manager = ReplicaManager(self.store, name)
        self.pop = PopEngine(self.store, OffsetTable(self.store), clock=clock)
        self.journal = PopJournal(self.store, self.manager)
        self.journal.ensure(T, 1)
        self.pop.use_journal(self.journal)

    def lead(self, epoch: int, other: str) -> None:
        was = self.journal.leads(T, 0)
        for topic in (T, JOURNAL):
            self.manager.become_leader(topic, 0, epoch, [other])
        if not was:
            self.pop.take_over(T, 0)

    def follow(self, epoch: int, leader: str) -> None:
        for topic in (T, JOURNAL):
            self.manager.become_follower(topic, 0, epoch, leader)

    def copy_from(self, leader: "Node") -> None:
        """What the follower's fetch loop does: append the leader's entries it lacks."""
        for topic in (T, JOURNAL):
            start = self.store.max_offset(topic, 0)
            entries = [m for _, m in leader.store.iterate(topic, 0, start=start)]
            if entries:
                self.store.append_replicated(topic, 0, start, entries)


@pytest.fixture
def pair(tmp_path):
    clock = Clock()
    a, b = Node(tmp_path, "a:1", clock), Node(tmp_path, "b:1", clock)
    a.lead(1, "b:1")
    b.follow(1, "a:1")
    for i in range(10):
        a.store.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i))
    yield clock, a, b
    a.store.close()
    b.store.close()


def _receipts(got, offsets):
    return [Receipt(G, T, 0, d.offset, got.pop_time) for d in got.deliveries if d.offset in offsets]


def test_the_new_leader_rebuilds_acks_and_leases_from_its_journal_copy(pair):
    clock, a, b = pair
    log_end = a.store.max_offset(LOG_TOPIC, 0)
    got = a.pop.acquire(G, T, 0, 6, 30_000)
    assert [d.offset for d in got.deliveries] == [0, 1, 2, 3, 4, 5]
    assert a.pop.ack(_receipts(got, {1, 3, 5}))[0] == 3  # out of order: the committed start stays 0
    assert a.store.max_offset(LOG_TOPIC, 0) == log_end  # the ops went to the journal, not the node log
    b.copy_from(a)
    b.lead(2, "a:1")  # a is gone: b takes the queue over
    assert b.pop.state(G, T, 0).to_json() == a.pop.state(G, T, 0).to_json()
    got = b.pop.acquire(G, T, 0, 32, 60_000)
    assert [d.offset for d in got.deliveries] == [6, 7, 8, 9]  # in flight: not yet; acked: never
    clock.now += 30_000  # past the old leader's deadline
    again = b.pop.acquire(G, T, 0, 32, 30_000)
    assert [(d.offset, d.count) for d in again.deliveries] == [(0, 2), (2, 2), (4, 2)]
    assert again.pop_time > got.pop_time


def test_a_stale_state_is_replaced_and_replay_starts_at_the_checkpoint(pair):
    clock, a, b = pair
    b.pop.acquire(G, T, 0, 10, 1_000)  # b's own idea of the queue (a stale one): replaced on take-over
    got = a.pop.acquire(G, T, 0, 2, 30_000)
    a.pop.snapshot()  # the engine's snapshot checkpoints every journal a leads
    a.pop.ack(_receipts(got, {0}))
    last = [m for _, m in a.store.iterate(JOURNAL, 0)]
    assert b'"k":"states"' in last[-2].body and b'"cp":%d' % last[-2].queue_offset in last[-1].body
    b.copy_from(a)
    b.lead(2, "a:1")
    assert b.pop.state(G, T, 0).to_json() == a.pop.state(G, T, 0).to_json()
    assert b.pop.state(G, T, 0).start == 1 and sorted(b.pop.state(G, T, 0).leases) == [1]


def test_the_journal_carried_forward_needs_no_older_entry_and_keeps_the_state(pair):
    """Local retention asks the journal's leader to write its live state forward (store.tier.local):
    a new checkpoint, so what the journal needs starts past the old entries, on the leader and, once
    copied, on the follower, whose take-over then rebuilds the same state."""
    clock, a, b = pair
    got = a.pop.acquire(G, T, 0, 6, 30_000)
    a.pop.ack(_receipts(got, {1, 3}))
    b.copy_from(a)
    carry_a, carry_b = PopCarry(a.store, a.pop, a.journal), PopCarry(b.store, b.pop, b.journal)
    first_a, first_b = (c.store.units(JOURNAL, 0, 0, 1)[0][0] for c in (carry_a, carry_b))
    assert carry_a.needed_from(JOURNAL) == first_a and carry_b.needed_from(JOURNAL) == first_b
    carry_b.forward(JOURNAL, first_b + 1)
    assert carry_b.carry() == 0  # a follower writes nothing: its leader carries the journal
    carry_a.forward(JOURNAL, first_a + 1)
    assert carry_a.carry() == 1
    assert carry_a.needed_from(JOURNAL) > first_a and carry_b.needed_from(JOURNAL) == first_b
    b.copy_from(a)
    assert carry_b.needed_from(JOURNAL) > b.store.units(JOURNAL, 0, a.store.max_offset(JOURNAL, 0) - 2, 1)[0][0]
    b.lead(2, "a:1")
    assert b.pop.state(G, T, 0).to_json() == a.pop.state(G, T, 0).to_json()
    assert sorted(b.pop.state(G, T, 0).leases) == [0, 2, 4, 5]


def test_queues_not_led_in_the_journal_log_to_the_node_log(pair):
    _, a, b = pair
    b.store.append(store.Message(topic="local", queue_id=0, body=b"x"))
    end = b.store.max_offset(LOG_TOPIC, 0)
    b.pop.acquire(G, "local", 0, 1, 1_000)
    assert b.store.max_offset(LOG_TOPIC, 0) > end and b.store.max_offset(JOURNAL, 0) == 0


class _View:
    def __init__(self, assignment) -> None:
        self.members = {1: SimpleNamespace(remoting_addr="a:1"), 2: SimpleNamespace(remoting_addr="b:1")}
        self.queues = {(T, 0): assignment}

    def on_assignment(self, fn) -> None:
        self.assigned = fn

    def on_members(self, fn) -> None:
        pass

    def live(self) -> list[int]:
        return [1, 2]


class _Nursery:
    """Keeps the tasks started outside `run()`; `run()` runs them, and any they start, concurrently."""

    def __init__(self) -> None:
        self.tasks, self.running = [], None

    def start_soon(self, fn, *args) -> None:
        if self.running is not None:
            self.running.start_soon(fn, *args)
        else:
            self.tasks.append((fn, args))

    def run(self) -> None:
        async def main():
            async with trio.open_nursery() as nursery:
                self.running = nursery
                for fn, args in self.tasks:
                    nursery.start_soon(fn, *args)
                self.tasks.clear()
            self.running = None
        trio.run(main)


class _Etcd:
    """etcd's compare-and-swap on the queue key: a write fails if another one landed since it read
    the key. `during_write` runs once, while a write is in flight."""

    def __init__(self) -> None:
        self.written, self.revision, self.during_write, self.unreachable = [], 0, None, 0

    async def update_isr(self, topic, qid, isr, epoch):
        if self.unreachable:
            self.unreachable -= 1
            raise EtcdError("etcd unreachable")
        read = self.revision
        if self.during_write is not None:
            hook, self.during_write = self.during_write, None
            hook()
        await trio.sleep(0.01)  # the round trip to etcd
        if self.revision != read:
            return None
        self.revision += 1
        self.written.append((topic, qid, isr, epoch))
        return SimpleNamespace(isr=tuple(isr), epoch=epoch)  # the new assignment's fields the roles read


def test_the_cluster_layer_gives_the_journal_the_queue_s_role_and_takes_over_once(pair):
    _, a, b = pair
    got = a.pop.acquire(G, T, 0, 4, 30_000)
    a.pop.ack(_receipts(got, {1}))
    b.copy_from(a)
    view, nursery = _View(QueueAssignment(1, (1, 2), (1, 2), 1)), _Nursery()
    etcd = _Etcd()
    node = SimpleNamespace(node_id=2, view=view, coordination=etcd)
    roles = ReplicaRoles(node, b.manager, nursery, pop=b.pop)
    roles.install()
    assert {b.manager.role(t, 0).role for t in (T, JOURNAL)} == {"follower"}
    view.assigned(T, 0, 2, [1, 2], [2], 2)  # a left: b elected in epoch 2
    assert {(b.manager.role(t, 0).role, b.manager.role(t, 0).epoch) for t in (T, JOURNAL)} == {("leader", 2)}
    assert b.pop.state(G, T, 0).to_json() == a.pop.state(G, T, 0).to_json()
    checkpoints = b.store.max_offset(JOURNAL, 0)
    view.queues[(T, 0)] = QueueAssignment(2, (1, 2), (2,), 2)
    view.assigned(T, 0, 2, [1, 2], [2], 2)  # heard again: no second take-over
    assert b.store.max_offset(JOURNAL, 0) == checkpoints
    nursery.tasks.clear()
    b.manager.role(T, 0).isr.add("a:1")  # a is back and in sync on the queue, not yet on the journal
    roles._isr_changed(T, 0, ["a:1", "b:1"])
    nursery.run()
    assert etcd.written[-1] == (T, 0, [2], 2)  # the ISR written to etcd: in sync on both only
    b.manager.role(JOURNAL, 0).isr.add("a:1")
    roles._isr_changed(JOURNAL, 0, ["a:1", "b:1"])
    nursery.run()
    assert etcd.written[-1] == (T, 0, [1, 2], 2)


def test_a_journal_catching_up_while_the_queue_s_set_is_written_is_not_lost(pair):
    """The queue and its journal catch up at the same moment under load: the second change arrives
    while the first is being written; one writer per queue writes again, so the caught-up replica
    ends in the set (two concurrent compare-and-swaps lost it, and it never rejoined)."""
    _, a, b = pair
    b.copy_from(a)
    view, nursery, etcd = _View(QueueAssignment(2, (1, 2), (2,), 2)), _Nursery(), _Etcd()
    roles = ReplicaRoles(SimpleNamespace(node_id=2, view=view, coordination=etcd), b.manager, nursery, pop=b.pop)
    roles.install()
    view.assigned(T, 0, 2, [1, 2], [2], 2)
    nursery.tasks.clear()
    b.manager.role(T, 0).isr.add("a:1")
    roles._isr_changed(T, 0, ["a:1", "b:1"])

    def journal_catches_up():
        b.manager.role(JOURNAL, 0).isr.add("a:1")
        roles._isr_changed(JOURNAL, 0, ["a:1", "b:1"])
    etcd.during_write = journal_catches_up
    nursery.run()
    assert etcd.written == [(T, 0, [2], 2), (T, 0, [1, 2], 2)]


def test_a_shrunk_set_counts_only_once_etcd_holds_it_and_a_failed_write_is_retried(pair):
    """KIP-497: the leader's shrink is written again after etcd was unreachable, and only then does
    the follower that left stop counting for the high watermark."""
    _, a, b = pair
    b.copy_from(a)
    view, nursery, etcd = _View(QueueAssignment(2, (1, 2), (1, 2), 2)), _Nursery(), _Etcd()
    roles = ReplicaRoles(SimpleNamespace(node_id=2, view=view, coordination=etcd), b.manager, nursery, pop=b.pop)
    roles.install()
    nursery.tasks.clear()
    assert b.manager.role(T, 0).accepted_isr == {"a:1"}
    for name in (T, JOURNAL):
        b.manager.role(name, 0).isr.discard("a:1")  # a fell behind on both
    etcd.unreachable = 2
    roles._isr_changed(T, 0, ["b:1"])
    assert b.manager.role(T, 0).accepted_isr == {"a:1"}  # not written yet: a still counts
    nursery.run()
    assert etcd.written == [(T, 0, [2], 2)] and etcd.unreachable == 0
    assert b.manager.role(T, 0).accepted_isr == b.manager.role(JOURNAL, 0).accepted_isr == set()


def test_a_queue_reassigned_to_one_node_is_plain_again_on_both(pair):
    """`rocketgate cluster move` ends with the queue on its new leader alone: the leader's and the old
    replica's roles (queue and pop journal) end, so nothing waits for or copies from the other."""
    _, _a, b = pair
    view, nursery = _View(QueueAssignment(1, (1, 2), (1, 2), 1)), _Nursery()
    roles = ReplicaRoles(SimpleNamespace(node_id=2, view=view, coordination=_Etcd()), b.manager, nursery, pop=b.pop)
    roles.install()
    assert {b.manager.role(t, 0).role for t in (T, JOURNAL)} == {"follower"}
    view.assigned(T, 0, 1, [1], [1], 2)  # moved away from b: it is no replica any more
    assert [b.manager.role(t, 0) for t in (T, JOURNAL)] == [None, None]
    view.assigned(T, 0, 2, [2, 1], [2], 3)  # moved to b, the other still a replica
    assert {b.manager.role(t, 0).role for t in (T, JOURNAL)} == {"leader"}
    view.assigned(T, 0, 2, [2], [2], 4)  # the other dropped: a plain queue of b
    assert [b.manager.role(t, 0) for t in (T, JOURNAL)] == [None, None]
