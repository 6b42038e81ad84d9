"""The state of one (group, topic, queue) in the pop engine, changed only by applying logged ops.

Every change is an op (a small dict): the engine decides, appends the op to its log, then applies
it here; a restart applies the same ops again, so replay and live use one code path.

Offsets below `start` are finished; `[start, next)` is the in-flight window: each offset there is
either finished (`done`, acknowledged, rejected or filtered out) or has a `Lease` (delivery count,
deadline in epoch ms, 0 = available now, and the pop time that names the current receipt). Offsets
from `next` on were never delivered. Memory is bounded by the window, not by the backlog.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator


def op_offsets(op: dict) -> Iterator[int]:
    """The offsets an op names: `r`, [first, end) ranges (one per acquired or acknowledged run, so
    an op stays small however many records it covers), or `o`, a list (the form logged before)."""
    for first, end in op.get("r", ()):
        yield from range(first, end)
    yield from op.get("o", ())


@dataclass(slots=True)  # one per in-flight record: no per-instance __dict__
class Lease:
    count: int  # deliveries so far
    deadline: int  # epoch ms when the record becomes available again; 0: available now
    pop_time: int  # names the delivery a receipt belongs to (unique per engine)


class QueueState:
    def __init__(self, start: int) -> None:
        self.start = start
        self.next = start
        self.leases: dict[int, Lease] = {}
        self.done: set[int] = set()
        self._earliest = 0  # no lease has a deadline below this (a lower bound; 0: look)

    # ---- ops ------------------------------------------------------------------------------
    def apply(self, op: dict) -> None:
        kind = op["k"]
        if kind == "pop":
            leased = False
            for offset in op_offsets(op):
                count = self.leases[offset].count if offset in self.leases else 0
                count = max(count, op["c"]) if "c" in op else count + 1  # "c": carried from another engine
                self.leases[offset] = Lease(count, op["d"], op["p"])
                leased = True
            if leased:
                self._earliest = min(self._earliest, op["d"])
            for first, end in op.get("s", ()):  # ranges skipped by the filters
                self.done.update(range(first, end))
            self.next = max(self.next, op["n"])
        elif kind == "ack":
            for offset in op_offsets(op):
                self.leases.pop(offset, None)
                if offset >= self.start:
                    self.done.add(offset)
        elif kind == "chg":
            lease = self.leases.get(op["o"])
            if lease is not None:
                lease.deadline = op["d"]
                self._earliest = min(self._earliest, op["d"])
        elif kind == "rel":
            for offset in op_offsets(op):
                lease = self.leases.get(offset)
                if lease is not None:
                    lease.deadline = 0
                    self._earliest = 0
        elif kind == "reset":  # an admin set the start (Kafka AlterShareGroupOffsets): nothing in flight
            self.start = self.next = op["s"]
            self.leases, self.done = {}, set()
        elif kind == "move":  # the store dropped everything below op["s"] (retention, reset)
            self.leases = {o: lease for o, lease in self.leases.items() if o >= op["s"]}
            self.done = {o for o in self.done if o >= op["s"]}
            self.start = max(self.start, op["s"])
            self.next = max(self.next, self.start)
        self._advance()

    def _advance(self) -> None:
        while self.start < self.next and self.start in self.done:
            self.done.discard(self.start)
            self.start += 1

    # ---- queries --------------------------------------------------------------------------
    def lease_for(self, offset: int, pop_time: int) -> Lease | None:
        """The lease a receipt (offset, pop time) names, if it is still the current one."""
        lease = self.leases.get(offset)
        if lease is None or lease.pop_time != pop_time:
            return None
        return lease

    def available(self, now_ms: int) -> list[int]:
        """Offsets that may be delivered again now (released or past their deadline), ascending.
        Scans the leases only once the earliest deadline has come (pops long-poll on every arrival)."""
        if now_ms < self._earliest:
            return []
        self._earliest = min((lease.deadline for lease in self.leases.values()), default=2 ** 63)
        return sorted(o for o, lease in self.leases.items() if lease.deadline <= now_ms)

    def in_flight(self, now_ms: int) -> int:
        return sum(1 for lease in self.leases.values() if lease.deadline > now_ms)

    def next_deadline(self, now_ms: int) -> int | None:
        future = [lease.deadline for lease in self.leases.values() if lease.deadline > now_ms]
        return min(future) if future else None

    # ---- snapshot -------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"start": self.start, "next": self.next, "done": sorted(self.done),
                "leases": [[o, lease.count, lease.deadline, lease.pop_time] for o, lease in sorted(self.leases.items())]}

    @classmethod
    def from_json(cls, doc: dict) -> "QueueState":
        state = cls(int(doc["start"]))
        state.next = int(doc["next"])
        state.done = {int(o) for o in doc.get("done", ())}
        state.leases = {int(o): Lease(int(c), int(d), int(p)) for o, c, d, p in doc.get("leases", ())}
        return state
