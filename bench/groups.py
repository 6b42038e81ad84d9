"""KIP-848 consumer-group rebalance time, gateway vs Apache Kafka 4.x: `make bench-groups`.

    python -m bench.groups [--members 1,10,50,100] [--rounds 3] [--doc docs/performance.md]

Per member count N, each round creates a fresh topic of 2N partitions and runs compat.GroupBench
(compat/java/kafkastreams, kafka-clients 4.3): N KafkaConsumers with group.protocol=consumer, one thread
each, in one JVM, join one fresh group. join = first subscribe until every partition is owned by exactly
one member and the assignment is balanced; leave = one member's close() until the other N-1 own every
partition again, balanced. Both brokers run at once with their default heartbeat interval (5 s); the
systems alternate per round (round 0 warms up, uncounted). The medians, min–max and the median of the
per-round gateway / Kafka ratios go to the "Consumer groups (KIP-848)" section of docs/performance.md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import uuid

from bench import report, rounds
from bench import scenarios as sc
from bench.brokers import Gateway, KafkaBroker
from compat.jvm import JAVA_DIR, JVM_FLAGS, classpath

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "performance.md")
HEADING = "Consumer groups (KIP-848): rebalance time"
METRICS = ("join_ms", "leave_ms")


def bench_classpath() -> str:
    classes = os.path.join(JAVA_DIR, "kafkastreams", "target", "classes")
    return f"{classes}:{classpath('kafkastreams')}"


def one_run(cp: str, bootstrap: str, members: int, timeout_ms: int = 180_000) -> dict:
    """{"join_ms": .., "leave_ms": ..} of one GroupBench run on a fresh topic and group."""
    topic = f"gb-{uuid.uuid4().hex[:8]}"
    flags = [f for f in JVM_FLAGS if not f.startswith("-Xmx")] + ["-Xmx1g"]
    cmd = [shutil.which("java") or "java", *flags, "-cp", cp, "compat.GroupBench", bootstrap, topic,
           str(2 * members), str(members), str(timeout_ms)]
    return sc.run_json(cmd, timeout_ms / 1000 * 2 + 120)


def _cell(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{rounds.median(values) / 1000:.2f} ({min(values) / 1000:.2f}–{max(values) / 1000:.2f})"


def _ratio(gateway: list, kafka: list) -> str:
    pairs = [(g, k) for g, k in zip(gateway, kafka) if g is not None and k is not None]
    ratios = rounds.per_round_ratios([g for g, _ in pairs], [k for _, k in pairs])
    if not ratios:
        return "n/a"
    return f"{rounds.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})"


def section(results: dict, n_rounds: int, meta: str) -> str:
    lines = [f"## {HEADING}", "",
             "`make bench-groups` (bench/groups.py): N Java KafkaConsumers (kafka-clients 4.3, "
             "`group.protocol=consumer`, one thread each in one JVM) join one fresh group on a fresh topic of "
             "2N partitions. *join*: first subscribe until every partition is owned by exactly one member and "
             "the assignment is balanced; *leave*: one member's close() until the other N-1 own every "
             "partition again, balanced. Both brokers at their default 5 s heartbeat interval (members learn a "
             "new target assignment at their next heartbeat, so seconds are expected on both). "
             f"{n_rounds} rounds, systems alternating; seconds as median (min–max); ratio = median of the "
             f"per-round gateway / Kafka 4.3 ratios (min–max). {meta}", "",
             "| members | gateway join s | Kafka join s | join ratio | gateway leave s | Kafka leave s | leave ratio |",
             "|---|---|---|---|---|---|---|"]
    for n, per in results.items():
        cells = [str(n)]
        for metric in METRICS:
            g = [v for v in per["gateway"][metric] if v is not None]
            k = [v for v in per["kafka"][metric] if v is not None]
            cells += [_cell(g), _cell(k), _ratio(per["gateway"][metric], per["kafka"][metric])]
        lines.append("| " + " | ".join(cells) + " |")
    failures = [f"{n} members [{s}] round {i}: {e}" for n, per in results.items() for s in per
                for i, e in per[s]["errors"]]
    if failures:
        lines += ["", "Failed runs (counted as n/a):", *[f"- {f}" for f in failures]]
    return "\n".join(lines) + "\n"


def write_doc(text: str, doc: str) -> None:
    """Replace the section if the page has it, else append it."""
    old = open(doc).read() if os.path.exists(doc) else ""
    found = report._section(old, HEADING)
    new = old.replace(found, text + "\n") if found else old.rstrip("\n") + "\n\n" + text
    with open(doc, "w") as f:
        f.write(new)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--members", default="1,10,50,100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--doc", default=DOC)
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.members.split(",")]
    cp = bench_classpath()
    with tempfile.TemporaryDirectory(prefix="groups-bench-") as work:
        systems = {"gateway": Gateway(os.path.join(work, "gateway")), "kafka": KafkaBroker(os.path.join(work, "kafka"))}
        for s in systems.values():
            s.start()
        try:
            results = {n: {name: {"join_ms": [], "leave_ms": [], "errors": []} for name in systems} for n in counts}
            for n in counts:
                for i in range(args.rounds + 1):  # round 0 warms up, uncounted
                    for name in rounds.order(i, tuple(systems)):
                        slot = results[n][name]
                        try:
                            r = one_run(cp, systems[name].bootstrap, n)
                        except Exception as exc:  # noqa: BLE001 - reported as n/a, the other system goes on
                            print(f"  {n} members [{name}] round {i}: failed: {exc}", flush=True)
                            if i:
                                slot["errors"].append((i, str(exc)[:200]))
                                slot["join_ms"].append(None)
                                slot["leave_ms"].append(None)
                            continue
                        print(f"  {n} members [{name}] round {i}: {r}", flush=True)
                        if i:
                            slot["join_ms"].append(r["join_ms"])
                            slot["leave_ms"].append(r["leave_ms"])
        finally:
            for s in systems.values():
                s.stop()
    meta = f"Machine: {os.cpu_count()} cores, shared with other jobs during the run."
    text = section(results, args.rounds, meta)
    print(text)
    write_doc(text, args.doc)


if __name__ == "__main__":
    main()
