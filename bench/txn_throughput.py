"""`python -m bench.txn_throughput`: Kafka transaction throughput, the gateway against Apache Kafka 4.3.1
(one KRaft node from bench/jars), both running at once, in interleaved rounds (bench.interleave).

Each run is a JVM of compat/java/src/kafkatxnworkload/compat/TxnThroughput.java: PRODUCERS threads, each
with its own transactional id, loop begin / RECORDS sends of SIZE bytes (record i of a transaction to
partition i % PARTITIONS) / commit; after a warm-up it counts the commits of `--seconds`. kafka-clients
4.3.1 use transactions v2 (both brokers finalize transaction.version=2), kafka-clients 3.9.2 use v1.
Rows: transactions/s and the broker's CPU per GB of record payload (/proc, every broker thread).

`--slices N` adds the finest alternation for the transactions/s row: one JVM (TxnSlices.java) with
PRODUCERS initialized producers per broker runs 1 s slices on each broker in turn (A B, B A, ...), N
per broker after two warm-up pairs, so the two halves of a pair are about a second apart."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import time

from bench import report
from bench.brokers import ROOT, Gateway, KafkaBroker
from bench.cluster_produce_parse import member
from bench.interleave import Interleaver
from bench.scenarios import BYTES, Unavailable, create_topics
from bench.txn_check import client_classpath
from compat.jvm import JAVA_DIR

SOURCES = [os.path.join(JAVA_DIR, "src", "kafkatxnworkload", "compat", f"{c}.java") for c in ("TxnThroughput", "TxnSlices")]
PARTITIONS, PRODUCERS, RECORDS, SIZE = 4, 4, 10, 100
WARMUP_MS = 3000
CLIENTS = {"4": "transactions v2 (kafka-clients 4.3.1)", "3.9": "transactions v1 (kafka-clients 3.9.2)"}


def compile_client(clients: str, classes: str) -> str:
    os.makedirs(classes, exist_ok=True)
    subprocess.run([shutil.which("javac"), "-nowarn", "-d", classes, "-cp", client_classpath(clients), *SOURCES],
                   check=True, capture_output=True, timeout=300)
    return classes


def slices(clients: str, classes: str, boots: dict[str, str], topics: dict[str, str], n: int, producers: int,
           slice_ms: int = 1000) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Per-slice transactions/s of each system (paired by slice) and their aborted counts."""
    names = list(boots)
    if len(set(topics.values())) != 1:
        raise ValueError("one topic name on every system")
    cmd = [shutil.which("java"), "-Xmx256m", "-cp", os.pathsep.join([classes, client_classpath(clients)]),
           "compat.TxnSlices", topics[names[0]], str(PARTITIONS), str(producers), str(RECORDS), str(SIZE),
           str(slice_ms), str(n), "2", f"ts-{clients}-{time.time_ns()}", *boots.values()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=n * len(names) * slice_ms / 1000 * 4 + 180)
    if done.returncode != 0:
        raise Unavailable(f"client failed: {done.stderr.strip()[-400:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    for line in done.stderr.splitlines():
        if "aborted after" in line:
            print(f"    (client: {line[-300:]})", flush=True)
    return {name: r[str(i)]["txn_per_s"] for i, name in enumerate(names)}, \
        {name: r[str(i)]["aborted"] for i, name in enumerate(names)}


class TxnRun:
    """One client version's runs: a fresh set of transactional ids each."""

    def __init__(self, clients: str, classes: str, seconds: float, producers: int) -> None:
        self.clients, self.classes, self.seconds, self.producers = clients, classes, seconds, producers
        self.runs = 0
        self.p50: dict[str, list[float]] = {}
        self.aborted: dict[str, int] = {}  # transactions aborted after an abortable error, per system

    def __call__(self, name: str, bootstrap: str, topic: str) -> dict:
        self.runs += 1
        cmd = [shutil.which("java"), "-Xmx256m", "-cp", os.pathsep.join([self.classes, client_classpath(self.clients)]),
               "compat.TxnThroughput", bootstrap, topic, str(PARTITIONS), str(self.producers), str(RECORDS),
               str(SIZE), str(WARMUP_MS), str(self.seconds), f"tt-{self.clients}-{self.runs}-{time.time_ns()}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=self.seconds + WARMUP_MS / 1000 + 120)
        if done.returncode != 0:
            raise Unavailable(f"client failed: {done.stderr.strip()[-400:]}")
        r = json.loads(done.stdout.strip().splitlines()[-1])
        if not r["txns"]:
            raise Unavailable("no transaction committed")
        self.p50.setdefault(name, []).append(r["commit_p50_ms"])
        self.aborted[name] = self.aborted.get(name, 0) + r["aborted"]
        if r["aborted"]:
            print(f"    [{name}] {r['aborted']} transactions aborted: {done.stderr.strip()[-300:]}", flush=True)
        return {"txn/s": r["txns"] / r["seconds"], BYTES: r["txns"] * RECORDS * SIZE}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.txn_throughput", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--producers", type=int, default=PRODUCERS)
    p.add_argument("--clients", default="4,3.9", help="comma-separated: 4 (TV2), 3.9 (TV1)")
    p.add_argument("--slices", type=int, default=0, help="also N 1 s slices per system from one JVM")
    p.add_argument("--flush", choices=["async", "sync"], default="async", help="the gateways' --flush (not with --cluster)")
    p.add_argument("--cluster", action="store_true",
                   help="the gateway as a 1-member cluster on its own etcd (transaction state in etcd)")
    p.add_argument("--versus-tree", metavar="DIR", help="also the gateway of the tree DIR (a `git archive` of an "
                   "older commit) as `before`; with --cluster: a 1-member cluster of it, instead of Kafka")
    args = p.parse_args(argv)
    others = ("before",) if args.versus_tree and args.cluster else ("before", "kafka") if args.versus_tree else ("kafka",)
    results = report.Results("gateway", others)
    rounds = Interleaver(results, args.rounds, lambda: False)
    load = [os.getloadavg()]
    began = time.time()
    p50, aborted = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-txn-tput-") as work:
        systems = {"gateway": Gateway(os.path.join(work, "gw"), flush=args.flush)}
        if args.versus_tree and not args.cluster:
            systems["before"] = Gateway(os.path.join(work, "before"), flush=args.flush, tree=args.versus_tree)
        if "kafka" in others:
            systems["kafka"] = KafkaBroker(os.path.join(work, "kafka"))
        etcd = etcd_before = None
        try:
            if args.cluster:
                etcd, systems["gateway"] = member(work, "gw", ROOT)
            if args.versus_tree and args.cluster:
                etcd_before, systems["before"] = member(work, "before", os.path.abspath(args.versus_tree))
            for s in systems.values():
                if not s.processes:
                    s.start()
            topic = f"txn-tput-{int(time.time())}"
            topics = {name: topic for name in systems}
            for s in systems.values():
                create_topics(s.bootstrap, [topic], PARTITIONS)
            for clients in args.clients.split(","):
                run = TxnRun(clients, compile_client(clients, os.path.join(work, f"classes-{clients}")),
                             args.seconds, args.producers)
                scenario = (f"{CLIENTS[clients]}{', gateway as a 1-member cluster' if args.cluster else ''}: "
                            f"{args.producers} producers, {RECORDS} × {SIZE} B records "
                            f"per transaction over {PARTITIONS} partitions")
                if args.rounds:
                    rounds.run(scenario, systems, lambda n: run(n, systems[n].bootstrap, topics[n]))
                    p50[scenario] = {n: report.median(v[1:]) for n, v in run.p50.items()}  # (v[0]: the warm-up)
                    aborted[scenario] = run.aborted
                if args.slices:
                    scenario += ", one JVM alternating 1 s slices"
                    per_slice, aborted[scenario] = slices(clients, run.classes, {n: s.bootstrap for n, s in systems.items()},
                                                          topics, args.slices, args.producers)
                    rounds.record(scenario, "txn/s", per_slice, better="higher")
                load.append(os.getloadavg())
        finally:
            for s in systems.values():
                s.stop()
            for e in (etcd, etcd_before):
                if e is not None:
                    e.stop()
    table = results.markdown()
    print(table)
    for scenario, by_system in p50.items():
        print(f"commit p50 ms, {scenario}: " + ", ".join(f"{n} {v:.1f}" for n, v in by_system.items()))
    for scenario, by_system in aborted.items():
        print(f"aborted after abortable errors, {scenario}: {by_system}")
    print(f"load average (1, 5, 15 min) at start and after each client: {[tuple(round(x, 1) for x in la) for la in load]}")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    with open(os.path.join(ROOT, "bench", "results", f"{stamp}-txn-throughput.json"), "w") as f:
        json.dump({"meta": {"started": began, "rounds": args.rounds, "seconds": args.seconds, "load": load,
                            "producers": args.producers, "commit_p50_ms": p50, "aborted": aborted},
                   "results": results.to_json()}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
