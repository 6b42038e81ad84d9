"""`rocketgate cluster move TOPIC QUEUE --to NODE`: a queue moved to another gateway (or shard of
`--shards N`) with its data, through the replication the cluster already has (docs/cluster.md,
"Moving a queue"), as Kafka's partition reassignment does: NODE joins the queue's replicas (not
in sync: the leader adds it once it has copied the whole queue), then, in sync, it is elected
leader (epoch bumped: the old leader refuses writes and follows it), then the other replicas are
dropped. Each step is one compare-and-swap in etcd and leaves a queue that serves; a move cut short
(the command killed, NODE slow) is finished by running it again, which goes on from the step the
assignment shows. Records acknowledged with acks=all are never lost, as on any leader change."""
from __future__ import annotations

import time

import trio

from cluster.coordination import Coordination
from cluster.model import QueueAssignment
from gateway.admin.endpoints import AdminError

POLL_S = 0.2


async def _current(c: Coordination, topic: str, queue_id: int) -> QueueAssignment:
    a, _ = await c.queue(topic, queue_id)
    if a is None:
        raise AdminError(f"{topic}/{queue_id} has no assignment in the cluster")
    return a


async def _swap(c: Coordination, topic: str, queue_id: int, change) -> QueueAssignment:
    """`change` applied to the queue's current assignment, again on a concurrent write (an in-sync
    set the leader wrote meanwhile); `change` returns None when the step is already done."""
    while True:
        a = await _current(c, topic, queue_id)
        wanted = change(a)
        if wanted is None:
            return a
        new = await c.swap_queue(topic, queue_id, a.epoch, lambda _a, w=wanted: w)
        if new is not None:
            return new
        await trio.sleep(POLL_S / 4)  # lost a race with another writer: read again


async def move(c: Coordination, topic: str, queue_id: int, to: int, timeout_s: float,
               on_step=lambda step, a: None) -> QueueAssignment:
    """The queue led by `to` alone, its data copied there first; AdminError when `to` is not a live
    member or has not caught up within `timeout_s` (the queue is then replicated on both: run again)."""
    live, *_ = await c.load()
    if to not in live:
        raise AdminError(f"node {to} is not a live member")

    def add(a: QueueAssignment):
        if to in a.replicas:
            return None
        return QueueAssignment(a.leader, (*a.replicas, to), a.isr, a.epoch + 1)
    a = await _swap(c, topic, queue_id, add)
    on_step("replica added", a)
    deadline = time.monotonic() + timeout_s
    while to not in a.isr:
        if time.monotonic() >= deadline:
            raise AdminError(f"node {to} has not caught up with {topic}/{queue_id} in {timeout_s:g} s "
                             f"(replicas {list(a.replicas)}, in sync {list(a.isr)}); run the move again")
        await trio.sleep(POLL_S)
        a = await _current(c, topic, queue_id)
    on_step("in sync", a)

    def lead(a: QueueAssignment):
        if a.leader == to:
            return None
        if to not in a.isr:
            raise AdminError(f"node {to} left the in-sync set of {topic}/{queue_id}; run the move again")
        return QueueAssignment(to, (to, *(r for r in a.replicas if r != to)), tuple(r for r in a.isr if r != a.leader),
                               a.epoch + 1)
    a = await _swap(c, topic, queue_id, lead)
    on_step("leads", a)

    def drop(a: QueueAssignment):
        if a.replicas == (to,):
            return None
        return QueueAssignment(to, (to,), (to,), a.epoch + 1)
    a = await _swap(c, topic, queue_id, drop)
    on_step("others dropped", a)
    return a
