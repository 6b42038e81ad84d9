"""The queue checker over a producer history and a final read, Jepsen style: every value the
producer was told `ok` is read back (lost), no value is read twice (duplicated), and within a
partition the acknowledged values are read in the order they were sent (reordered). And the
consumer checker (`check_deliveries`): what a consumer was handed against the final read."""
from __future__ import annotations

from collections import Counter


def check(history: list[dict], final_read: list[dict]) -> dict:
    """history: {"type": invoke|ok|fail|info, "value": int, "partition": int, ...} in time order;
    final_read: {"partition", "offset", "value"} of every record read back after healing."""
    ok = {op["value"] for op in history if op["type"] == "ok"}
    counts = Counter(op["type"] for op in history)
    read_counts = Counter(r["value"] for r in final_read)
    sent_order = {op["value"]: i for i, op in enumerate(op for op in history if op["type"] == "invoke")}
    lost = sorted(ok - set(read_counts))
    duplicated = sorted(v for v, n in read_counts.items() if n > 1)
    reordered = []
    by_partition: dict[int, list[dict]] = {}
    for r in sorted(final_read, key=lambda r: (r["partition"], r["offset"])):
        by_partition.setdefault(r["partition"], []).append(r)
    for records in by_partition.values():
        last = -1
        for r in records:
            if r["value"] not in ok:
                continue
            position = sent_order.get(r["value"], -1)
            if position < last:
                reordered.append(r["value"])
            last = max(last, position)
    unexpected = sorted(set(read_counts) - set(sent_order))  # read but never sent: corruption
    return {"ops": counts["invoke"], "ok": counts["ok"], "fail": counts["fail"], "info": counts["info"],
            "read": len(final_read), "lost": lost, "duplicated": duplicated, "reordered": reordered,
            "unexpected": unexpected,
            "valid": not (lost or duplicated or reordered or unexpected)}


def check_deliveries(deliveries: list[dict], final_read: list[dict], sent: set | None = None) -> dict:
    """deliveries: {"type": "ok", "f": "receive", "value", "offset"} per message a consumer was handed;
    final_read as for `check`; sent: the values the producer tried (None: not known). Anomalies:
    *unreceived* (in the final log, never handed out: at-least-once broken, e.g. a committed offset
    past what was consumed), *phantom* (handed out, not in the final log: a read of a write that was
    lost later), *moved* (handed out at another queue offset than the final log has it: a read of a
    log that diverged), *unexpected* (never sent). Deliveries of one value more than once are
    RocketMQ's at-least-once (counted, *redelivered*, not an anomaly)."""
    got = [d for d in deliveries if d.get("f") == "receive"]
    where = {r["value"]: r["offset"] for r in final_read}
    counts = Counter(d["value"] for d in got)
    unexpected = sorted(v for v in counts if sent is not None and v not in sent)
    phantom = sorted(v for v in counts if v not in where and v not in unexpected)
    moved = sorted({d["value"] for d in got if d["value"] in where and d["offset"] != where[d["value"]]})
    unreceived = sorted(set(where) - set(counts))
    return {"ops": len(got), "ok": len(got), "fail": 0, "info": 0, "read": len(final_read),
            "received": len(counts), "redelivered": sum(n - 1 for n in counts.values()),
            "unreceived": unreceived, "phantom": phantom, "moved": moved, "unexpected": unexpected,
            "valid": not (unreceived or phantom or moved or unexpected)}
