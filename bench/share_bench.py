"""Share-group consume throughput, gateway vs Apache Kafka 4.x share groups, and POP consume
throughput, gateway vs Apache RocketMQ 5.5: `make bench-share`.

    python -m bench.share_bench [--records N] [--rounds R] [--consumers 1,4,16] [--pop N] [--doc docs/performance.md]

Both systems run at once (share groups enabled on Kafka). Per consumer count, each round uses a
fresh one-partition topic with N records (produced before the clock starts) and a fresh share
group reading from the earliest offset; K KafkaShareConsumers (compat.KafkaShare `share`, explicit
ACCEPT + commitSync per poll, max.poll.records 100) consume until all N were acknowledged.
Throughput = N / (first record received .. last acknowledged). Systems alternate per round; the
medians, and the median (min–max) of the per-round gateway/Kafka ratios, go to the "Share groups"
section of docs/performance.md.

With `--pop N` (0: skip), RocketMQ 5.5 runs too and each round also times POP consumption (its own
section): a fresh 4-queue topic with N small messages, the group set to POP with `mqadmin
setConsumeMode`, one stock Java push consumer in POP mode (compat.PopBench, as tests/pop/test_pop_java.py
drives RocketPop) consuming with CONSUME_SUCCESS until all N succeeded, gateway and RocketMQ alternating.
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

from bench.brokers import Gateway, KafkaBroker, RocketMQBroker
from compat.jvm import JAVA_DIR, JVM_FLAGS, KAFKA_CLIENTS, ROCKETMQ_CLIENTS, classpath
from compat.tools import mqadmin

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "performance.md")
HEADING = "## Share groups (KIP-932): consume throughput on one partition"
POP_HEADING = "## POP consumption (RocketMQ 5): Java push consumer in POP mode"


def share_classpath(workdir: str) -> str:
    """kafka4's classpath with compat.KafkaShare (built by `make compat-jars`, else compiled here)."""
    return _with_class(workdir, KAFKA_CLIENTS["4"], "kafkashare", "KafkaShare")


def pop_classpath(workdir: str) -> str:
    """rocketmq5's classpath with compat.PopBench (built by `make compat-jars`, else compiled here)."""
    return _with_class(workdir, ROCKETMQ_CLIENTS["5"], "rocketmqpop", "PopBench")


def _with_class(workdir: str, module: str, folder: str, name: str) -> str:
    cp = classpath(module)
    if os.path.exists(os.path.join(JAVA_DIR, module, "target", "classes", "compat", f"{name}.class")):
        return cp
    out = os.path.join(workdir, f"classes-{name}")
    src = [os.path.join(JAVA_DIR, "src", folder, "compat", f"{name}.java"),
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


def pop_run(cp: str, namesrv: str, messages: int, log_dir: str) -> float:
    """Messages per second for one fresh topic and group in POP mode."""
    topic, group = f"PopB{uuid.uuid4().hex[:8]}", f"popb-{uuid.uuid4().hex[:8]}"
    for args in (["updateTopic", "-t", topic, "-r", "4", "-w", "4"], ["updateSubGroup", "-g", group],
                 ["setConsumeMode", "-t", topic, "-g", group, "-m", "POP", "-q", "0"]):
        r = mqadmin([args[0], "-n", namesrv, "-c", "DefaultCluster", *args[1:]], log_dir)
        if r.returncode != 0:
            raise RuntimeError(f"mqadmin {args[0]}: {r.stdout[-1000:]}{r.stderr[-1000:]}")
    props = [f"-Duser.home={log_dir}", f"-Drocketmq.client.logRoot={log_dir}", "-Drocketmq.client.logLevel=WARN"]
    cmd = [shutil.which("java") or "java", *JVM_FLAGS, *props, "-cp", cp, "compat.PopBench", namesrv, topic, group,
           str(messages)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400, cwd=log_dir)
    doc = next((json.loads(line) for line in r.stdout.splitlines() if line.startswith("{") and '"end"' not in line),
               None)
    if doc is None or not doc.get("ok") or doc["distinct"] != messages or doc["ms"] <= 0:
        raise RuntimeError(f"{doc}: {r.stderr[-2000:]}")
    return messages / (doc["ms"] / 1000)


def _ratios(gateway: dict, reference: dict) -> list[float]:
    """gateway / reference of each round both finished (they ran back to back)."""
    return [gateway[i] / reference[i] for i in sorted(gateway) if i in reference]


def _row(label, g: dict, ref: dict) -> str:
    ratios = _ratios(g, ref)
    ratio = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})" if ratios else "n/a"
    return f"| {label} | {_cell(list(g.values()))} | {_cell(list(ref.values()))} | {ratio} |"


def section(results: dict, records: int, rounds: int) -> str:
    lines = [HEADING, "",
             f"`make bench-share` (bench/share_bench.py): {records:,} records (a few bytes each) on a one-partition "
             f"topic, K KafkaShareConsumers (kafka-clients 4.2, explicit ACCEPT + commitSync per poll of at most "
             f"100 records) in one fresh share group; {rounds} rounds, systems alternating. Records per second "
             "from the first record received to the last acknowledged, median (min–max); the ratio is the "
             "median (min–max) of the per-round gateway/Kafka ratios.", "",
             "| consumers | gateway rec/s | Kafka 4.3 rec/s | gateway / Kafka |", "|---|---|---|---|"]
    lines += [_row(k, per["gateway"], per["kafka"]) for k, per in results.items()]
    return "\n".join(lines) + "\n"


def pop_section(results: dict, messages: int, rounds: int) -> str:
    lines = [POP_HEADING, "",
             f"`make bench-share` with `--pop {messages}` (bench/share_bench.py): {messages:,} small messages on a "
             "fresh 4-queue topic, the group set to POP (`mqadmin setConsumeMode -m POP`), one stock Java push "
             "consumer (rocketmq-client 5.3, clientRebalance=false) consuming with CONSUME_SUCCESS (the client "
             f"acks each); {rounds} rounds, systems alternating. Messages per second from the first message "
             "received to the last one consumed, median (min–max); the ratio is the median (min–max) of the "
             "per-round ratios.", "",
             "| consumer | gateway msg/s | RocketMQ 5.5 msg/s | gateway / RocketMQ |", "|---|---|---|---|",
             _row("1 push consumer (POP)", results["gateway"], results["rocketmq"])]
    return "\n".join(lines) + "\n"


def _cell(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def write_doc(text: str, doc: str, heading: str = HEADING) -> None:
    old = open(doc).read() if os.path.exists(doc) else ""
    pattern = re.compile(re.escape(heading) + r".*?(?=\n## |\Z)", re.S)
    new = pattern.sub(lambda _: text.rstrip("\n") + "\n", old) if heading in old else old.rstrip("\n") + "\n\n" + text
    with open(doc, "w") as f:
        f.write(new if new.endswith("\n") else new + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--consumers", default="1,4,16", help="share consumer counts ('' for none)")
    ap.add_argument("--pop", type=int, default=0, help="POP messages per round (0: no POP rows)")
    ap.add_argument("--doc", default=DOC)
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.consumers.split(",") if c]
    with tempfile.TemporaryDirectory(prefix="share-bench-") as work:
        systems = {"gateway": Gateway(os.path.join(work, "gateway"))}
        if counts:
            systems["kafka"] = KafkaBroker(os.path.join(work, "kafka"), extra={"group.share.enable": "true"})
        if args.pop:
            systems["rocketmq"] = RocketMQBroker(os.path.join(work, "rocketmq"))
        for s in systems.values():
            s.start()
        try:
            results = {k: _rounds(args.rounds, {n: systems[n].bootstrap for n in ("gateway", "kafka")},
                                  lambda bootstrap: one_run(share_classpath(work), bootstrap, k, args.records),
                                  f"{k} consumers") for k in counts}
            pops = None
            if args.pop:
                cp, logs = pop_classpath(work), os.path.join(work, "pop-logs")
                os.makedirs(logs, exist_ok=True)
                pops = _rounds(args.rounds, {n: systems[n].namesrv for n in ("gateway", "rocketmq")},
                               lambda namesrv: pop_run(cp, namesrv, args.pop, logs), "POP")
        finally:
            for s in systems.values():
                s.stop()
    if counts:
        text = section(results, args.records, args.rounds)
        print(text)
        write_doc(text, args.doc)
    if pops is not None:
        text = pop_section(pops, args.pop, args.rounds)
        print(text)
        write_doc(text, args.doc, POP_HEADING)


def _rounds(rounds: int, targets: dict, run, label: str) -> dict:
    """{system: {round: rate}}: round 0 warms up (uncounted); the order alternates per round."""
    out = {name: {} for name in targets}
    for i in range(rounds + 1):
        order = list(targets) if i % 2 == 0 else list(reversed(targets))
        for name in order:
            try:
                rate = run(targets[name])
            except Exception as exc:  # noqa: BLE001 - reported as n/a, the other system goes on
                print(f"  {label} [{name}]: failed: {exc}", flush=True)
                continue
            if i:
                out[name][i] = rate
            print(f"  {label} [{name}] round {i}: {rate:,.0f} /s", flush=True)
    return out


if __name__ == "__main__":
    main()
