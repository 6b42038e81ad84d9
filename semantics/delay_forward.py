"""Forwarding due messages to the gateway leading their queue (semantics.delay in a cluster).

In a cluster (docs/cluster.md) the schedule topic is this gateway's own, but the target queue may
be led by another gateway (moved by a failover or a reassignment since the send). The scheduler's
`router` (None: one process, every queue is here) says where each due message goes:
`router.target(topic, queue_id)` is HERE (append locally), LATER (no live leader, or this gateway
is fenced: try again after FORWARD_RETRY_MS) or the leader's address, where
`await router.deliver(address, msgs)` appends them (raises when it did not).

The schedule progress of a forwarded entry advances only once the leader acknowledged it: a level
queue waits for the answer before going past it, a forwarded timer unit stays in flight (pending
in the persisted progress). A crash or a lost answer in between sends it again, so the leader must
not store it twice (a committed transaction's record is exactly-once): each copy names its
delivery (`delivery_key`: this gateway's node id, the schedule entry, the born time), a forward
that may have been taken before (its previous send failed, or it was due before this scheduler
started) is sent `resent`, and the leader then looks for those copies in the tail of its queues
(`held_copies`, the last DEDUP_SCAN_MAX entries: they are in the log, so they survive a restart
and a leader change to an in-sync replica) and answers for them once they are replicated, without
storing them again.
"""
from __future__ import annotations

import logging

from semantics.routing import PROPERTY_SCHEDULE_OFFSET, PROPERTY_SCHEDULE_SOURCE

log = logging.getLogger("rocketgate.delay")

HERE, LATER = "here", "later"  # router answers besides a leader's address (module doc)
FORWARD_RETRY_MS = 1000  # a leader that refused or did not answer is tried again after this
FORWARD_MAX = 64  # messages per forward request
FORWARD_MAX_BYTES = 4 << 20  # body bytes per forward request (the remoting frame cap is 16 MiB)
DEDUP_SCAN_MAX = 10_000  # entries of a queue's tail a leader looks through for a re-sent forward's copies
_SCAN_STEP = 256


def delivery_key(msg) -> tuple | None:
    """What names one delivery of a due message across gateways (None: not a due message's copy)."""
    props = msg.properties
    marker = props.get(PROPERTY_SCHEDULE_OFFSET)
    return None if marker is None else (props.get(PROPERTY_SCHEDULE_SOURCE), marker, msg.born_timestamp)


def held_copies(store, msgs: list, max_scan: int = DEDUP_SCAN_MAX) -> dict:
    """delivery key -> (queue offset, stored copy) for each of `msgs` already in its queue's last
    `max_scan` entries (read backwards from the end, stopping once every one is found)."""
    wanted: dict[tuple[str, int], set] = {}
    for m in msgs:
        key = delivery_key(m)
        if key is not None:
            wanted.setdefault((m.topic, m.queue_id), set()).add(key)
    found: dict = {}
    for (topic, qid), keys in wanted.items():
        high = store.max_offset(topic, qid)
        floor = max(store.min_offset(topic, qid), high - max_scan)
        left = set(keys)
        while high > floor and left:
            start = max(floor, high - _SCAN_STEP)
            for qoff, stored in store.iterate(topic, qid, start, high):
                key = delivery_key(stored)
                if key in left:
                    left.discard(key)
                    found[key] = (qoff, stored)
            high = start
    return found


class Forward:
    """Due messages for one leader, sent in one request: the level queue run [start, end) they
    came from, or the timer units in flight."""

    __slots__ = ("address", "msgs", "size", "level", "start", "end", "timers", "resent")

    def __init__(self, address: str, level: int | None = None, start: int = 0) -> None:
        self.address, self.msgs, self.size = address, [], 0
        self.resent = False  # some message may have been taken by an earlier send (module doc)
        self.level, self.start, self.end = level, start, start
        self.timers: list[tuple[tuple[int, int, int], int]] = []  # (heap item, span)

    def full(self) -> bool:
        return len(self.msgs) >= FORWARD_MAX or self.size >= FORWARD_MAX_BYTES

    def add(self, msg, resent: bool = False) -> None:
        self.resent = self.resent or resent
        self.msgs.append(msg)
        self.size += len(msg.body)


class Forwarder:
    """The scheduler's forwarding state: the batches collected in a round, the timer units in
    flight, and the leaders held back after a failure."""

    def __init__(self, clock) -> None:
        self.clock = clock
        self.batches: list[Forward] = []  # collected by deliver_due, sent by send()
        self.in_flight: set[tuple[int, int, int]] = set()  # timer heap items sent, not yet acknowledged
        self._held: dict[str, int] = {}  # leader address -> ms before which it is not tried again
        self._timer_batches: dict[str, Forward] = {}  # the open timer batch of each leader (this round)
        self.unsure: set[tuple] = set()  # delivery keys of sends whose answer did not say taken
        self.started_ms: int | None = None  # entries due by then may have been sent before a restart

    def resent(self, due: int) -> bool:
        """Whether an entry due at `due` may have been forwarded by this gateway before it started."""
        return self.started_ms is not None and due <= self.started_ms

    def where(self, router, msg, now: int) -> str:
        """HERE, LATER or the address of the gateway leading the copy's target queue."""
        if msg is None or router is None:
            return HERE
        where = router.target(msg.topic, msg.queue_id)
        if where not in (HERE, LATER) and self._held.get(where, 0) > now:
            return LATER
        return where

    def add_timer(self, where: str, item: tuple[int, int, int], span: int, msg) -> None:
        """A due timer unit for the leader at `where`: in flight until its batch is answered."""
        batch = self._timer_batches.get(where)
        if batch is None or batch.full():
            batch = self._timer_batches[where] = Forward(where)
            self.batches.append(batch)
        batch.add(msg, self.resent(item[0]))
        batch.timers.append((item, span))
        self.in_flight.add(item)

    async def send(self, router, settle) -> int:
        """Send the collected batches, each in one request; `settle(batch, ok)` after each answer
        (the scheduler moves its progress on ok). Returns how many messages leaders took."""
        batches, self.batches, self._timer_batches = self.batches, [], {}
        sent, failed = 0, set()
        for f in batches:
            keys = {delivery_key(m) for m in f.msgs}
            try:
                if f.address in failed:
                    raise ConnectionError("its previous batch failed")
                await router.deliver(f.address, f.msgs, resent=f.resent or not self.unsure.isdisjoint(keys))
                self.unsure -= keys
                ok = True
            except Exception as exc:  # refused, unreachable, timed out: the entries stay pending
                log.warning("delay scheduler: %d due messages not taken by %s (%s); retrying in %d ms",
                            len(f.msgs), f.address, exc, FORWARD_RETRY_MS)
                self._held[f.address] = self.clock.now_ms() + FORWARD_RETRY_MS
                failed.add(f.address)
                self.unsure |= keys  # perhaps taken, answer lost: the next send says so
                ok = False
            for item, _span in f.timers:
                self.in_flight.discard(item)
            settle(f, ok)
            sent += len(f.msgs) if ok else 0
        return sent
