"""Handing POP's in-flight state over from one POP owner of diskless queues to the next
(docs/diskless.md, "POP through several gateways"): the owner publishes what is in flight (leases
with their invisible time and receipt, and what was finished in the window), and a gateway that
starts serving POP of those queues (it took the lease, or the owner stopped answering) adopts it
through its engine's logged ops, so a message popped at the old owner stays invisible until its
time and its receipt still acks it. At-least-once remains: what changed after the last publish
(at most one beat) is not handed over."""
from __future__ import annotations

import json
from typing import Callable

from semantics.pop import INIT_MIN, PopEngine
from semantics.pop_log import offset_ranges


def inflight(engine: PopEngine, keep: Callable[[str], bool]) -> bytes:
    """The engine's in-flight state of the topics `keep` accepts, as the bytes to publish (every
    lease: one past its deadline is available again, and must stay so at the next owner)."""
    states = []
    for group in sorted(engine.groups()):
        for topic, qid in engine.queues(group):
            state = engine.state(group, topic, qid)
            if state is None or not keep(topic):
                continue
            leases = sorted([o, lease.deadline, lease.pop_time] for o, lease in state.leases.items())
            states.append({"g": group, "t": topic, "q": qid, "start": state.start, "next": state.next,
                           "done": offset_ranges(sorted(state.done)), "leases": leases})
    return json.dumps({"states": states}, separators=(",", ":")).encode()


def adopt(engine: PopEngine, data: bytes, known: Callable[[str], bool], now_ms: int) -> int:
    """Merge a published in-flight state into `engine` (topics `known` here only): what the old
    owner finished is finished here, what it leased is leased here until the same deadline under the
    same pop time (its receipts stay valid), unless this engine holds a later lease of it. Logged ops
    (as every change): a restart keeps them. An adopted lease counts one delivery here (the old
    owner's count is not carried). How many leases still invisible it adopted."""
    adopted = 0
    for s in json.loads(data).get("states", ()):
        group, topic, qid = s["g"], s["t"], int(s["q"])
        if not known(topic):
            continue
        state = engine._state(group, topic, qid, INIT_MIN)  # (the engine's own way to a group's state)
        theirs_next = max(state.next, int(s["next"]))
        mine = {o for o, lease in state.leases.items() if lease.deadline > now_ms}  # leased here, live: kept
        by_delivery: dict[tuple[int, int], list[int]] = {}
        for offset, deadline, pop_time in s["leases"]:
            ours, live = state.leases.get(offset), deadline > now_ms
            deadline = deadline if live else 0  # past its time there: available again here
            if offset >= state.start and offset not in state.done and (ours is None or ours.deadline < deadline):
                by_delivery.setdefault((deadline, pop_time), []).append(offset)
                adopted += live
        for (deadline, pop_time), offsets in sorted(by_delivery.items()):
            engine._do(group, topic, qid, state, {"k": "pop", "r": offset_ranges(sorted(offsets)), "s": [],
                                                  "n": theirs_next, "d": deadline, "p": pop_time})
            if deadline:
                engine._arm(deadline, topic, qid)
            engine._last_pop_time = max(engine._last_pop_time, pop_time)  # no later receipt of ours collides
        if theirs_next > state.next:
            engine._do(group, topic, qid, state, {"k": "pop", "r": [], "s": [], "n": theirs_next, "d": 0, "p": 0})
        finished = {o for first, end in s["done"] for o in range(first, end)}
        finished |= set(range(state.start, int(s["start"])))
        finished = sorted(o for o in finished - mine if o >= state.start and o not in state.done)
        if finished:
            engine._do(group, topic, qid, state, {"k": "ack", "r": offset_ranges(finished)})
    return adopted
