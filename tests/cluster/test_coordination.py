"""cluster.coordination and cluster.view against a real etcd: registration under a lease, topic
creation (first creator wins), fenced ISR updates and elections, producer-id blocks, the view's watch."""
from __future__ import annotations

import pytest
import trio

from cluster.coordination import Coordination, NodeIdTaken
from cluster.etcd import Etcd
from cluster.model import Member, QueueAssignment, TopicRecord, place
from cluster.view import ClusterView


def run(etcd_server, fn):
    async def main():
        etcd = Etcd.from_url(etcd_server.url)
        try:
            return await fn(Coordination(etcd))
        finally:
            await etcd.aclose()
    return trio.run(main)


def test_register_refuses_a_live_node_id_and_frees_it_on_revoke(etcd_server):
    async def fn(c: Coordination):
        lease = await c.register(Member(1, "127.0.0.1", 1, 2), ttl=10)
        with pytest.raises(NodeIdTaken):
            await c.register(Member(1, "127.0.0.1", 3, 4), ttl=10)
        await c.deregister(lease)
        await c.register(Member(1, "127.0.0.1", 3, 4), ttl=10)
        members, *_ = await c.load()
        assert members[1].kafka_port == 3
    run(etcd_server, fn)


def test_create_topic_first_creator_wins(etcd_server):
    async def fn(c: Coordination):
        a1 = place("t", 3, [1, 2], 1)
        assert await c.create_topic("t", TopicRecord(3), a1)
        assert not await c.create_topic("t", TopicRecord(5), place("t", 5, [3], 1))
        _, topics, queues, _, _ = await c.load()
        assert topics["t"].queues == 3 and [queues[("t", q)] for q in range(3)] == a1
    run(etcd_server, fn)


def test_isr_and_election_are_fenced_by_epoch(etcd_server):
    async def fn(c: Coordination):
        await c.create_topic("t", TopicRecord(1), [QueueAssignment(1, (1, 2), (1, 2), 0)])
        assert (await c.update_isr("t", 0, [1], expected_epoch=0)).isr == (1,)
        with pytest.raises(ValueError):
            await c.elect_leader("t", 0, 2, expected_epoch=0)  # 2 left the in-sync set
        await c.update_isr("t", 0, [1, 2], expected_epoch=0)
        new = await c.elect_leader("t", 0, 2, expected_epoch=0)
        assert new.leader == 2 and new.epoch == 1
        assert new.isr == (2,)  # the old leader rejoins the in-sync set once caught up
        assert await c.elect_leader("t", 0, 1, expected_epoch=0) is None  # a stale epoch is fenced
        assert await c.update_isr("t", 0, [2], expected_epoch=0) is None
        moved = await c.reassign("t", 0, [1])
        assert moved == QueueAssignment(1, (1,), (1,), 2)
    run(etcd_server, fn)


def test_producer_id_blocks_never_overlap(etcd_server):
    async def fn(c: Coordination):
        blocks = []

        async def take():
            blocks.append(await c.allocate_producer_ids(100))
        async with trio.open_nursery() as n:
            for _ in range(5):
                n.start_soon(take)
        ids = [i for b in blocks for i in b]
        assert len(ids) == len(set(ids)) == 500 and min(ids) == 1000
    run(etcd_server, fn)


def test_view_follows_changes_and_calls_subscribers(etcd_server):
    async def fn(c: Coordination):
        view = ClusterView(c)
        await view.load()
        heard, members = [], []
        view.on_assignment(lambda *args: heard.append(args))
        view.on_members(lambda m: members.append(sorted(m)))
        async with trio.open_nursery() as n:
            await n.start(view.run)
            lease = await c.register(Member(7, "h", 1, 2), ttl=10)
            await c.create_topic("t", TopicRecord(2), place("t", 2, [7], 1))
            await c.elect_leader("t", 0, 7, expected_epoch=0)
            await c.deregister(lease)
            with trio.fail_after(10):
                while len(heard) < 3 or len(members) < 2:
                    await trio.sleep(0.05)
            n.cancel_scope.cancel()
        assert members == [[7], []]
        assert sorted(heard) == [("t", 0, 7, [7], [7], 0), ("t", 0, 7, [7], [7], 1), ("t", 1, 7, [7], [7], 0)]
        assert view.queues_of("t")[0].epoch == 1
    run(etcd_server, fn)


def test_a_reload_older_than_the_watch_does_not_take_the_view_back(etcd_server):
    """A rejoin reloads the view while its watch runs. When the reload's snapshot was taken before an
    election that the watch then brought first (seed 2804: node 3 elected itself in epoch 8 while its
    rejoin's read was in flight), applying that snapshot put epoch 7 back in the view for good: the
    watch, already past the election, never brought it again, and Metadata named the old leader."""
    async def fn(c: Coordination):
        await c.create_topic("t", TopicRecord(1), place("t", 1, [7, 8], 2))
        view = ClusterView(c)
        await view.load()
        real_load, other = c.load, ({7, 8} - {view.queues[("t", 0)].leader}).pop()
        seen = []

        async def load_then_elect():  # the snapshot is read, then the election lands before it is used
            snapshot = await real_load()
            await c.elect_leader("t", 0, other, expected_epoch=0)
            with trio.fail_after(10):
                while view.queues[("t", 0)].epoch != 1:  # the watch brought the election first
                    await trio.sleep(0.05)
            seen.append(view.revision)
            c.load = real_load
            return snapshot

        async with trio.open_nursery() as n:
            await n.start(view.run)
            c.load = load_then_elect
            await view.load()
            await trio.sleep(0.5)  # the watch has nothing more to bring
            n.cancel_scope.cancel()
        assert (view.queues[("t", 0)].leader, view.queues[("t", 0)].epoch) == (other, 1)
        assert view.revision >= seen[0]  # never back to the old snapshot's
    run(etcd_server, fn)


def test_a_watch_event_the_loaded_snapshot_already_holds_is_not_applied_again():
    """A watch that lags behind a reload brings changes the snapshot already holds: applying them
    would take the view back (an older epoch) until the watch catches up. In process, no etcd."""
    from cluster import model
    from cluster.etcd import KeyValue, WatchEvent

    class Snapshot:  # a Coordination whose state is at revision 10, the queue in epoch 2
        async def load(self):
            return {}, {"t": TopicRecord(1)}, {("t", 0): QueueAssignment(2, (1, 2), (1, 2), 2)}, {}, 10

    async def main():
        view = ClusterView(Snapshot())
        await view.load()
        heard = []
        view.on_assignment(lambda *args: heard.append(args))
        older = QueueAssignment(1, (1, 2), (1, 2), 1).to_json()
        await view._apply([WatchEvent("PUT", KeyValue(model.queue_key("t", 0), older, 9, 5, 3, 0))])
        assert view.queues[("t", 0)].epoch == 2 and heard == []
        newer = QueueAssignment(1, (1, 2), (1, 2), 3).to_json()
        await view._apply([WatchEvent("PUT", KeyValue(model.queue_key("t", 0), newer, 11, 5, 4, 0))])
        assert view.queues[("t", 0)].epoch == 3 and view.revision == 11
    trio.run(main)
