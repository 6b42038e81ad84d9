"""Forwarding due messages to the gateway leading their queue (semantics.delay in a cluster).

In a cluster (docs/cluster.md) the schedule topic is this gateway's own, but the target queue may
be led by another gateway (moved by a failover or a reassignment since the send). The scheduler's
`router` (None: one process, every queue is here) says where each due message goes:
`router.target(topic, queue_id)` is HERE (append locally), LATER (no live leader, or this gateway
is fenced: try again after FORWARD_RETRY_MS) or the leader's address, where
`await router.deliver(address, msgs)` appends them (raises when it did not).

The schedule progress of a forwarded entry advances only once the leader acknowledged it: a level
queue waits for the answer before going past it, a forwarded timer unit stays in flight (pending
in the persisted progress). A crash or a lost answer in between delivers it again (at-least-once,
as RocketMQ's broker); recovery at start finds the copy only if it reached this gateway's replica
of the queue.
"""
from __future__ import annotations

import logging

log = logging.getLogger("rocketgate.delay")

HERE, LATER = "here", "later"  # router answers besides a leader's address (module doc)
FORWARD_RETRY_MS = 1000  # a leader that refused or did not answer is tried again after this
FORWARD_MAX = 64  # messages per forward request
FORWARD_MAX_BYTES = 4 << 20  # body bytes per forward request (the remoting frame cap is 16 MiB)


class Forward:
    """Due messages for one leader, sent in one request: the level queue run [start, end) they
    came from, or the timer units in flight."""

    __slots__ = ("address", "msgs", "size", "level", "start", "end", "timers")

    def __init__(self, address: str, level: int | None = None, start: int = 0) -> None:
        self.address, self.msgs, self.size = address, [], 0
        self.level, self.start, self.end = level, start, start
        self.timers: list[tuple[tuple[int, int, int], int]] = []  # (heap item, span)

    def full(self) -> bool:
        return len(self.msgs) >= FORWARD_MAX or self.size >= FORWARD_MAX_BYTES

    def add(self, msg) -> None:
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
        batch.add(msg)
        batch.timers.append((item, span))
        self.in_flight.add(item)

    async def send(self, router, settle) -> int:
        """Send the collected batches, each in one request; `settle(batch, ok)` after each answer
        (the scheduler moves its progress on ok). Returns how many messages leaders took."""
        batches, self.batches, self._timer_batches = self.batches, [], {}
        sent, failed = 0, set()
        for f in batches:
            try:
                if f.address in failed:
                    raise ConnectionError("its previous batch failed")
                await router.deliver(f.address, f.msgs)
                ok = True
            except Exception as exc:  # refused, unreachable, timed out: the entries stay pending
                log.warning("delay scheduler: %d due messages not taken by %s (%s); retrying in %d ms",
                            len(f.msgs), f.address, exc, FORWARD_RETRY_MS)
                self._held[f.address] = self.clock.now_ms() + FORWARD_RETRY_MS
                failed.add(f.address)
                ok = False
            for item, _span in f.timers:
                self.in_flight.discard(item)
            settle(f, ok)
            sent += len(f.msgs) if ok else 0
        return sent
