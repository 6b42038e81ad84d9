"""RocketMQ delay levels and half messages on diskless topics (docs/diskless.md, "Delay levels and
half messages"). A delayed or half message waits where it waits on a plain topic: in the schedule or
half topic of the gateway that took the send (local CommitLog topics, replicated like its others).
When it is due, the delay scheduler hands it to this router, which writes it through the WAL like
any send; its schedule progress moves only once the WAL object and index entry are in the store
(semantics.delay_forward), so a failed write is tried again, never lost. A committed half is not
appended to its diskless queue directly: `leads` says no, so the commit puts it in the schedule
topic's timer queue, due at once, in the same local write as its op message
(semantics.transactions, as for a queue another cluster member leads), and the scheduler delivers it."""
from __future__ import annotations

import functools
import itertools

from interop.to_kafka import native_batch
from semantics.delay_forward import HERE
from semantics.diskless import DisklessWriter, is_diskless

DISKLESS = "diskless"  # the router's address of every diskless queue


async def append_messages(app, msgs: list) -> list[int]:
    """Write RocketMQ messages (store.Message) through the WAL, one run per (topic, queue), all in
    the open WAL buffer at once; their queue offsets, in order. Raises ObjectStoreError (nothing
    of a failed run is acknowledged)."""
    order = sorted(range(len(msgs)), key=lambda i: (msgs[i].topic, msgs[i].queue_id))  # stable
    runs = []
    for (topic, qid), group in itertools.groupby(order, key=lambda i: (msgs[i].topic, msgs[i].queue_id)):
        group = list(group)
        run = b"".join(native_batch(msgs[i], 0) for i in group)
        slot = app.diskless.writer.enqueue(topic, qid, run, len(group), max(msgs[i].born_timestamp for i in group))
        runs.append((topic, qid, group, slot))
    offsets = [0] * len(msgs)
    for topic, qid, group, slot in runs:
        base = await DisklessWriter.result(slot)
        app.arrivals.notify(topic, qid)
        for n, i in enumerate(group):
            offsets[i] = base + n
    return offsets


class DisklessRouter:
    """The delay scheduler's router (semantics.delay_forward): diskless queues are DISKLESS and
    delivered through the WAL from any gateway; the others are `inner`'s (a cluster's leader
    router), or HERE."""

    def __init__(self, app, inner=None) -> None:
        self.app, self.inner = app, inner

    def target(self, topic: str, queue_id: int) -> str:
        if is_diskless(self.app.store.topics.get(topic)):
            return DISKLESS
        return HERE if self.inner is None else self.inner.target(topic, queue_id)

    async def deliver(self, address: str, msgs: list, resent: bool = False) -> None:
        if address == DISKLESS:  # a re-sent one may be written twice (at-least-once, as RocketMQ's)
            await append_messages(self.app, msgs)
        else:
            await self.inner.deliver(address, msgs, resent)


def _leads(app, inner, topic: str, queue_id: int) -> bool:
    """A commit appends here unless the queue is diskless (then the scheduler writes it) or `inner` says no."""
    return not is_diskless(app.store.topics.get(topic)) and (inner is None or inner(topic, queue_id))


def route_due_messages(app, router=None, leads=None) -> None:
    """Set where the App's due delayed and committed messages go: `router` / `leads` (a cluster's;
    None: everything here), with diskless queues written through the WAL when the App has them."""
    if app.diskless is not None:
        router, leads = DisklessRouter(app, router), functools.partial(_leads, app, leads)
    app.delay.router = router
    if leads is not None:
        app.transactions.leads = leads
