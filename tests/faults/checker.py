"""The queue checker over a producer history and a final read, Jepsen style: every value the
producer was told `ok` is read back (lost), no value is read twice (duplicated), and within a
partition the acknowledged values are read in the order they were sent (reordered)."""
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
