"""The anomaly checker of the transactional workload (compat/java/src/kafkatxnworkload, bench/txn_check.py):
Jepsen's Kafka/Bufstream queue and txn classes over an elle-style history (every value unique, every
transaction's reads and writes logged, a final read_committed read of every partition).

Classes, each with examples:
- aborted_read: a value of an aborted transaction was read by a read_committed consumer.
- lost_write: a value of a committed transaction is missing from the final read.
- torn_transaction: the final read holds some but not all of one transaction's values.
- duplicate: one value read at two different (partition, offset) places.
- inconsistent_offset: one (partition, offset) read with two different values.
- non_monotonic_poll: a consumer's successive records of a partition went back or repeated an offset.
- G1c: a cycle of write-write (offset order within a partition) and write-read (a transaction read a
  value another wrote) dependencies with at least one write-read edge between committed transactions.
- G0 (reported, not an error for Kafka): a cycle of write-write edges only: two transactions whose
  writes land in opposite orders in two partitions, which Kafka's transactions do not forbid.
A transaction whose end failed ("unknown") counts as committed when any of its values was read,
else as aborted.
"""
from __future__ import annotations

import json
from collections import defaultdict

from bench.graph_cycles import cycles

CLASSES = ["lost_write", "aborted_read", "torn_transaction", "non_monotonic_poll", "duplicate",
           "inconsistent_offset", "G1c"]
EXAMPLES = 3


def load(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def writer_of(value: str) -> str:
    """The transaction that wrote `value` ("<txn id>-<index>")."""
    return value.rsplit("-", 1)[0]


def check(history: list[dict]) -> dict:
    """{class: [examples...]} for every class (empty lists: none seen), plus "counts" and "G0"."""
    txns = {h["id"]: h for h in history if h["kind"] == "txn"}
    streams: dict[str, list] = defaultdict(list)  # reader -> [(partition, offset, value)] in read order
    for h in history:
        if h["kind"] == "txn":
            streams[h["id"].rsplit("-", 1)[0]] += [tuple(r) for r in h["reads"]]
        elif h["kind"] == "poll":
            streams[h["reader"]] += [tuple(r) for r in h["records"]]
    final = streams.get("final", [])
    final_values = {v for _p, _o, v in final}
    read_values = {v for stream in streams.values() for _p, _o, v in stream}
    writers_read = {writer_of(v) for v in read_values}

    def committed(tid: str) -> bool:
        t = txns.get(tid)
        if t is None:
            return False
        if t["outcome"] == "unknown":
            return tid in writers_read
        return t["outcome"] == "commit"

    found: dict[str, list] = {c: [] for c in CLASSES}
    for reader, stream in streams.items():
        last: dict[int, int] = {}
        for p, o, v in stream:
            if p in last and o <= last[p]:
                found["non_monotonic_poll"].append(f"{reader}: partition {p} offset {o} after {last[p]}")
            last[p] = max(o, last.get(p, -1))
            if txns.get(writer_of(v), {}).get("outcome") == "abort":
                found["aborted_read"].append(f"{reader} read {v} at {p}/{o} (aborted)")
    places: dict[str, set] = defaultdict(set)
    values_at: dict[tuple, set] = defaultdict(set)
    for stream in streams.values():
        for p, o, v in stream:
            places[v].add((p, o))
            values_at[(p, o)].add(v)
    found["duplicate"] = [f"{v} at {sorted(at)}" for v, at in places.items() if len(at) > 1]
    found["inconsistent_offset"] = [f"{p}/{o}: {sorted(vs)}" for (p, o), vs in values_at.items() if len(vs) > 1]
    for tid, t in txns.items():
        written = [w[2] for w in t["writes"]]
        seen = [v for v in written if v in final_values]
        if committed(tid):
            found["lost_write"] += [f"{v} of {tid} ({t['outcome']})" for v in written if v not in final_values]
        if seen and len(seen) < len(written):
            found["torn_transaction"].append(f"{tid} ({t['outcome']}): saw {seen} of {written}")
    cycles, write_cycles = _cycles(txns, streams, final, committed)
    found["G1c"] = cycles
    result = {c: found[c] for c in CLASSES}
    result["G0"] = write_cycles
    result["counts"] = {"transactions": len(txns),
                        "committed": sum(1 for t in txns if committed(t)),
                        "aborted": sum(1 for t in txns.values() if t["outcome"] == "abort"),
                        "unknown": sum(1 for t in txns.values() if t["outcome"] == "unknown"),
                        "values_read_finally": len(final_values)}
    return result


def _cycles(txns, streams, final, committed) -> tuple[list, list]:
    """(G1c examples, G0 examples): strongly connected components of the dependency graph."""
    ww: dict[str, set] = defaultdict(set)
    wr: dict[str, set] = defaultdict(set)
    by_partition: dict[int, list] = defaultdict(list)
    for p, o, v in final:
        by_partition[p].append((o, writer_of(v)))
    for entries in by_partition.values():
        order = [t for _o, t in sorted(entries)]
        for a, b in zip(order, order[1:]):
            if a != b and committed(a) and committed(b):
                ww[a].add(b)
    for tid, t in txns.items():
        for _p, _o, v in t["reads"]:
            w = writer_of(v)
            if w != tid and committed(w) and committed(tid):
                wr[w].add(tid)
    both = {n: ww[n] | wr[n] for n in set(ww) | set(wr)}
    g1c = [c for c in cycles(both) if any(b in c for a in c for b in wr.get(a, ()))]
    g0 = cycles(ww)
    return [f"cycle {c[:6]}{'...' if len(c) > 6 else ''}" for c in g1c], \
        [f"cycle {c[:6]}{'...' if len(c) > 6 else ''}" for c in g0]


def summary_row(name: str, result: dict) -> str:
    """One markdown table row: the run, its counts, then each class's number of cases."""
    c = result["counts"]
    cells = [name, str(c["transactions"]), str(c["committed"]), str(c["aborted"]), str(c["unknown"])]
    cells += [str(len(result[k])) for k in CLASSES] + [str(len(result["G0"]))]
    return "| " + " | ".join(cells) + " |"


HEADER = ("| run | txns | committed | aborted | unknown | " + " | ".join(CLASSES) + " | G0 (allowed) |\n"
          "| " + " | ".join(["---"] * (6 + len(CLASSES))) + " |")
