"""One queue's POP state as plain data, and the ops that merge another engine's into this one's
(the hand-over between POP owners of diskless queues: semantics.pop_handover, docs/diskless.md
"Hand-over"). Pure: the engine (`PopEngine.export_inflight` / `import_inflight`) logs and applies
the ops, as every change."""
from __future__ import annotations

from semantics.pop_log import offset_ranges
from semantics.pop_state import QueueState


def export_state(state: QueueState) -> dict:
    """The window (start, next), what is finished in it, and every lease as [offset, deadline, pop
    time, delivery count] (one past its deadline too: it is available again, and must stay so)."""
    leases = sorted([o, lease.deadline, lease.pop_time, lease.count] for o, lease in state.leases.items())
    return {"start": state.start, "next": state.next, "done": offset_ranges(sorted(state.done)), "leases": leases}


def merge_ops(state: QueueState, theirs: dict, now_ms: int) -> tuple[list[dict], int]:
    """The ops that take `theirs` (an `export_state` of another engine) into `state`, and how many
    leases still invisible they adopt. What they finished is finished here; what they leased is
    leased here until the same deadline under the same pop time (their receipts stay valid) with
    their delivery count (maxReconsumeTimes and the dead-letter queue count across owners), unless
    a lease here ends later; one past its time there is available here at once."""
    ops, adopted = [], 0
    theirs_next = max(state.next, int(theirs["next"]))
    mine = {o for o, lease in state.leases.items() if lease.deadline > now_ms}  # leased here, live: kept
    by_delivery: dict[tuple[int, int, int], list[int]] = {}
    for offset, deadline, pop_time, *count in theirs["leases"]:
        ours, live = state.leases.get(offset), deadline > now_ms
        deadline = deadline if live else 0
        if offset >= state.start and offset not in state.done and (ours is None or ours.deadline < deadline):
            by_delivery.setdefault((deadline, pop_time, int(count[0]) if count else 1), []).append(offset)
            adopted += live
    for (deadline, pop_time, count), offsets in sorted(by_delivery.items()):
        ops.append({"k": "pop", "r": offset_ranges(sorted(offsets)), "s": [], "n": theirs_next, "d": deadline,
                    "p": pop_time, "c": count})
    if theirs_next > state.next and not ops:
        ops.append({"k": "pop", "r": [], "s": [], "n": theirs_next, "d": 0, "p": 0})
    finished = {o for first, end in theirs["done"] for o in range(first, end)}
    finished |= set(range(state.start, int(theirs["start"])))
    finished = sorted(o for o in finished - mine if o >= state.start and o not in state.done)
    if finished:
        ops.append({"k": "ack", "r": offset_ranges(finished)})
    return ops, adopted
