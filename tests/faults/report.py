"""docs/faults.md from one run: a row per workload (operations, outcomes, each anomaly counted), a row
per fault class and workload (the operations invoked from that fault's start to the next fault, and
the anomalies among them), and the schedule with recovery times."""
from __future__ import annotations

import os
import time
from collections import defaultdict

KEPT = "<!-- Everything below is kept by run.py: the runs table gets one row per run; the rest is hand-written. -->"
RUNS_HEADING = "## All runs"
RUNS_TABLE = ["| date (UTC) | seed | fault classes (rounds) | per workload: ops / ok / anomalies | verdict | rerun args |",
              "|---|---|---|---|---|---|"]
ANOMALIES = ("lost", "duplicated", "reordered", "unexpected", "regressed", "aborted_read", "torn", "disagree",
             "fenced", "nonlinearizable", "unreceived", "phantom", "moved", "read_differs", "unserved_end",
             "early", "rolled_back_read")


def acks_during(history: list[dict], e: dict) -> int:
    """Operations acknowledged while the fault held (availability, not safety)."""
    return sum(1 for op in history if op["type"] == "ok" and e["start"] <= op["time"] <= e["healed"])


def recovery_time(history: list[dict], e: dict) -> float | None:
    """From the heal to the first acknowledgement of an operation invoked after it."""
    invoked = {op["value"]: op["time"] for op in history if op["type"] == "invoke"}
    first = min((op["time"] for op in history if op["type"] == "ok" and invoked.get(op["value"], -1) >= e["healed"]),
                default=None)
    return None if first is None else round(first - e["healed"], 2)


def _window(events: list[dict], i: int) -> tuple[float, float]:
    end = events[i + 1]["start"] if i + 1 < len(events) else float("inf")
    return events[i]["start"], end


def per_fault_class(workloads: dict[str, dict], events: list[dict]) -> list[str]:
    """Rows: fault class x workload -> invoked, ok, fail, info and anomalies among ops invoked in its windows."""
    rows = []
    for name, w in workloads.items():
        if not w.get("per_fault", True):
            continue
        invoked = {op["value"]: op["time"] for op in w["history"] if op["type"] == "invoke"}
        outcome = {op["value"]: op["type"] for op in w["history"] if op["type"] != "invoke"}
        table: dict[str, dict] = defaultdict(lambda: defaultdict(int))
        for i, e in enumerate(events):
            lo, hi = _window(events, i)
            row = table[e["fault"]]
            row["faults"] += 1
            values = {v for v, t in invoked.items() if lo <= t < hi}
            row["ops"] += len(values)
            for v in values:
                row[outcome.get(v, "info")] += 1
            for key in ANOMALIES:
                row[key] += sum(1 for v in w["result"].get(key, []) if lo <= invoked.get(v, -1) < hi)
        for fault, row in sorted(table.items()):
            bad = ", ".join(f"{k} {row[k]}" for k in ANOMALIES if row[k]) or "none"
            rows.append(f"| {fault} | {row['faults']} | {name} | {row['ops']} | {row['ok']} | {row['fail']} | "
                        f"{row['info']} | {bad} |")
    return rows


def kept_part(path: str, row: str) -> list[str]:
    """The part of the existing report below KEPT, with `row` added to the runs table."""
    old = open(path).read().split(KEPT, 1)[1].strip("\n").splitlines() if os.path.exists(path) else []
    if RUNS_HEADING not in old:
        old = ["", RUNS_HEADING, "", *RUNS_TABLE, *old]
    at = old.index(RUNS_HEADING) + 1
    while at < len(old) and not old[at].startswith("|"):
        at += 1
    while at < len(old) and old[at].startswith("|"):
        at += 1
    return [KEPT, "", *old[:at], row, *old[at:]]


def run_row(workloads: dict[str, dict], events: list[dict], rerun: str) -> str:
    seed = rerun.split()[1]
    classes = ", ".join(sorted({e["fault"] for e in events}))
    counts = "; ".join(
        f"{n}: {w['result']['ops']} / {w['result']['ok']} / "
        + (", ".join(f"{k} {len(w['result'][k])}" for k in ANOMALIES if w["result"].get(k)) or "none")
        for n, w in workloads.items())
    verdict = "valid" if all(w["result"]["valid"] for w in workloads.values()) else "**INVALID**"
    if any(w["result"].get("planted") for w in workloads.values()):
        verdict += " (a loss planted by --plant-loss)"
    return (f"| {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} | {seed} | {classes} ({len(events)}) | {counts} | "
            f"{verdict} | `{rerun}` |")


def write(path: str, header: list[str], workloads: dict[str, dict], events: list[dict], notes: list[str],
          rerun: str) -> None:
    """workloads: name -> {"label", "history", "result"} (result: counts and lists of anomalous values)."""
    lines = [*header, "", "## Workloads", "",
             "| workload | ops | ok | fail | info | anomalies | verdict |", "|---|---|---|---|---|---|---|"]
    for name, w in workloads.items():
        r = w["result"]
        bad = ", ".join(f"{k} {len(r[k])}" for k in ANOMALIES if r.get(k)) or "none"
        lines.append(f"| {w['label']} | {r['ops']} | {r['ok']} | {r['fail']} | {r['info']} | {bad} | "
                     f"{'valid' if r['valid'] else '**INVALID**'} |")
    timed = {n: w for n, w in workloads.items() if w.get("per_fault", True)}
    lines += ["", *notes, "", "## Per fault class", "",
              "Operations invoked from each fault's start until the next fault's start (so the heal and the",
              "recovery after it count for the fault), and the anomalies among them.", "",
              "| fault class | faults | workload | ops | ok | fail | info | anomalies |", "|---|---|---|---|---|---|---|---|",
              *per_fault_class(workloads, events), "", "## Schedule", "",
              "| # | fault | target | detail | start s | healed s | " +
              " | ".join(f"{n}: acks while faulted | {n}: first ack after heal s" for n in timed) + " |",
              "|---|---|---|---|---|---|" + "---|---|" * len(timed)]
    for i, e in enumerate(events, 1):
        cells = []
        for w in timed.values():
            r = recovery_time(w["history"], e)
            cells += [str(acks_during(w["history"], e)), "none" if r is None else str(r)]
        lines.append(f"| {i} | {e['fault']} | g{e['target']} | {e.get('detail') or ''} | {e['start']:.1f} | "
                     f"{e['healed']:.1f} | " + " | ".join(cells) + " |")
    lines += ["", "*acks while faulted*: operations acknowledged between the fault's start and its heal",
              "(availability, not safety; a kill's window includes the restart). *first ack after heal*: from the",
              "heal to the first acknowledgement of an operation invoked after it. info = indeterminate (timed",
              "out), fail = refused."]
    for name, w in workloads.items():
        anomalies = [f"- {name} {k}: {w['result'][k][:50]}" for k in ANOMALIES if w["result"].get(k)]
        if anomalies:
            lines += ["", f"## Anomalies: {name}", "", *anomalies]
    lines += ["", *kept_part(path, run_row(workloads, events, rerun))]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
