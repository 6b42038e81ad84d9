"""Share-group consume throughput, gateway vs Apache Kafka 4.x share groups: `make bench-share`.

    python -m bench.share_bench [--records N] [--rounds R] [--consumers 1,4,16] [--doc docs/performance.md]

Both systems run at once (share groups enabled on Kafka). Per consumer count, each round uses a
fresh one-partition topic with N records (produced before the clock starts) and a fresh share
group reading from the earliest offset; K KafkaShareConsumers (compat.KafkaShare `share`, explicit
ACCEPT + commitSync per poll, max.poll.records 100) consume until all N were acknowledged.
Throughput = N / (first record received .. last acknowledged). Systems alternate per round
(`bench.interleave`); the median and spread go to the "Share groups" section of docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import uuid

from bench.brokers import Gateway, KafkaBroker
from compat.jvm import JAVA_DIR, JVM_FLAGS, KAFKA_CLIENTS, classpath

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "performance.md")
HEADING = "## Share groups (KIP-932): consume throughput on one partition"


def share_classpath(workdir: str) -> str:
    """kafka4's classpath with compat.KafkaShare (built by `make compat-jars`, else compiled here)."""
    cp = classpath(KAFKA_CLIENTS["4"])
    if os.path.exists(os.path.join(JAVA_DIR, "kafka4", "target", "classes", "compat", "KafkaShare.class")):
        return cp
    out = os.path.join(workdir, "classes")
    src = [os.path.join(JAVA_DIR, "src", "kafkashare", "compat", "KafkaShare.java"),
           os.path.join(JAVA_DIR, "src", "common", "compat", "Out.java")]
    subprocess.run([shutil.which("javac") or "javac", "-d", out, "-cp", cp, *src], check=True, timeout=300)
    return f"{out}:{cp}"


def scenario(cp: str, bootstrap: str, topic: str, group: str, *args) -> dict:
    cmd = [shutil.which("java") or "java", *JVM_FLAGS, "-cp", cp, "compat.KafkaShare", bootstrap, topic, group,
           *map(str, args)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    for line in r.stdout.splitlines():
        if line.startswith("{") and '"end"' not in line:
            doc = json.loads(line)
            if not doc.get("ok"):
                raise RuntimeError("\n".join(doc.get("error", [])) + r.stderr[-2000:])
            return doc
    raise RuntimeError(f"no result: {r.stderr[-2000:]}")


def one_run(cp: str, bootstrap: str, consumers: int, records: int) -> float:
    """Records per second for one fresh topic and group."""
    topic, group = f"sb-{uuid.uuid4().hex[:8]}", f"sbg-{uuid.uuid4().hex[:8]}"
    scenario(cp, bootstrap, topic, group, "produce", records, "r")
    scenario(cp, bootstrap, topic, group, "config", "share.auto.offset.reset=earliest")
    r = scenario(cp, bootstrap, topic, group, "share", consumers, records, "explicit")
    if r["distinct"] != records:
        raise RuntimeError(f"{r['distinct']} of {records} records consumed")
    return records / (r["ms"] / 1000)


def section(results: dict, records: int, rounds: int) -> str:
    lines = [HEADING, "",
             f"`make bench-share` (bench/share_bench.py): {records:,} records (a few bytes each) on a one-partition "
             f"topic, K KafkaShareConsumers (kafka-clients 4.2, explicit ACCEPT + commitSync per poll of at most "
             f"100 records) in one fresh share group; {rounds} rounds, systems alternating. Records per second "
             "from the first record received to the last acknowledged, median (min–max).", "",
             "| consumers | gateway rec/s | Kafka 4.3 rec/s | gateway / Kafka |", "|---|---|---|---|"]
    for k, per in results.items():
        g, kf = per["gateway"], per["kafka"]
        if not g or not kf:
            lines.append(f"| {k} | {_cell(g)} | {_cell(kf)} | n/a |")
            continue
        lines.append(f"| {k} | {_cell(g)} | {_cell(kf)} | {statistics.median(g) / statistics.median(kf):.2f} |")
    return "\n".join(lines) + "\n"


def _cell(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def write_doc(text: str, doc: str) -> None:
    old = open(doc).read() if os.path.exists(doc) else ""
    pattern = re.compile(re.escape(HEADING) + r".*?(?=\n## |\Z)", re.S)
    new = pattern.sub(lambda _: text.rstrip("\n"), old) if HEADING in old else old.rstrip("\n") + "\n\n" + text
    with open(doc, "w") as f:
        f.write(new if new.endswith("\n") else new + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--consumers", default="1,4,16")
    ap.add_argument("--doc", default=DOC)
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.consumers.split(",")]
    with tempfile.TemporaryDirectory(prefix="share-bench-") as work:
        cp = share_classpath(work)
        systems = {"gateway": Gateway(os.path.join(work, "gateway")),
                   "kafka": KafkaBroker(os.path.join(work, "kafka"), extra={"group.share.enable": "true"})}
        for s in systems.values():
            s.start()
        try:
            results = {k: {name: [] for name in systems} for k in counts}
            for k in counts:
                for i in range(args.rounds + 1):  # round 0 warms up, uncounted
                    order = list(systems) if i % 2 == 0 else list(reversed(systems))
                    for name in order:
                        try:
                            rate = one_run(cp, systems[name].bootstrap, k, args.records)
                        except Exception as exc:  # noqa: BLE001 - reported as n/a, the other system goes on
                            print(f"  {k} consumers [{name}]: failed: {exc}", flush=True)
                            continue
                        if i:
                            results[k][name].append(rate)
                        print(f"  {k} consumers [{name}] round {i}: {rate:,.0f} rec/s", flush=True)
        finally:
            for s in systems.values():
                s.stop()
    text = section(results, args.records, args.rounds)
    print(text)
    write_doc(text, args.doc)


if __name__ == "__main__":
    main()
