"""Topic creation at scale (issue 18): the latency of one CreateTopics (one topic per request, one
connection, raw Kafka protocol) on a gateway that already holds N topics, for two code trees in
alternating rounds (the other tree's gateway runs with cwd = that tree, see bench.brokers.Gateway);
then, for this tree, the time to create 10 000 topics one by one and the restart times with them;
and, for both trees, topics auto-created through Metadata (allow_auto_topic_creation, one topic per
request: how issue 18 measured 36 ms each) on a fresh gateway.

A gateway "holding N topics" starts on a data dir whose config/topics.json (RocketMQ's layout)
already lists N one-queue topics, so the large sizes take seconds to set up instead of hours
(creating them one at a time is what the old code could not do in reasonable time).

    python -m bench.topic_scale [--before /work/main] [--sizes 500,1000] [--creates 30] [--rounds 2]
                                [--total 10000] [--auto 5000] [--flush async|sync] [--write-docs]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from bench import report, rounds
from bench.brokers import ROOT, Gateway
from bench.procstat import cpu_used
from tests.kafka.kafka_raw import RawClient

CREATE_TOPICS = 19
METADATA = 3
SIZES = (500, 1000, 1500, 5000, 10000)
DOCS = os.path.join(ROOT, "docs", "robustness.md")


def prefill(data_dir: str, count: int) -> None:
    """A topics.json with `count` one-queue topics, as the gateway writes it."""
    os.makedirs(os.path.join(data_dir, "config"), exist_ok=True)
    table = {f"pre-{i:05d}": {"topicName": f"pre-{i:05d}", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
                              "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False, "attributes": {}}
             for i in range(count)}
    with open(os.path.join(data_dir, "config", "topics.json"), "w") as f:
        json.dump({"topicConfigTable": table, "dataVersion": {"counter": count, "timestamp": 0}}, f)


def create(client: RawClient, name: str) -> float:
    """Seconds for one CreateTopics of one one-partition topic (asserts it was created)."""
    began = time.perf_counter()
    resp = client.call(CREATE_TOPICS, 5, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}],
                                          "timeout_ms": 60000})
    elapsed = time.perf_counter() - began
    assert resp["topics"][0]["error_code"] == 0, resp
    return elapsed


def auto_create(client: RawClient, name: str) -> float:
    """Seconds for one Metadata v9 request naming a new topic, which auto-creates it (asserted)."""
    began = time.perf_counter()
    resp = client.call(METADATA, 9, {"topics": [{"name": name}], "allow_auto_topic_creation": True})
    elapsed = time.perf_counter() - began
    topic = resp["topics"][0]
    assert topic["error_code"] == 0 and topic["partitions"], resp
    return elapsed


def auto_creates(tree: str, count: int, flush: str = "async") -> dict:
    """`count` topics auto-created through Metadata one by one on a fresh gateway of `tree`: the
    total seconds, the median and p90 ms of one, and the gateway's CPU ms per create."""
    with tempfile.TemporaryDirectory(prefix="rocketgate-topics-") as tmp:
        g = Gateway(tmp, flush=flush, tree=tree).start()
        try:
            client = RawClient(g.bootstrap, timeout=120)
            for i in range(3):  # warm-up: connection, first write
                auto_create(client, f"warm-{i}")
            cpu_before = g.cpu_sample()
            began = time.perf_counter()
            times = [auto_create(client, f"auto-{i:05d}") * 1000 for i in range(count)]
            total = time.perf_counter() - began
            cpu = cpu_used(cpu_before, g.cpu_sample()) * 1000 / count
            client.close()
        finally:
            g.stop()
    return {"total_s": total, "median_ms": rounds.median(times), "p90_ms": _q(times, 0.9), "cpu_ms": cpu}


def per_create(tree: str, size: int, creates: int, flush: str = "async") -> tuple[list[float], float, float]:
    """(ms of each of `creates` creates, start seconds, the gateway's CPU ms per create) on a
    gateway of `tree` holding `size` topics. The CPU figure hardly depends on the machine's load,
    where the latency on a shared machine does."""
    with tempfile.TemporaryDirectory(prefix="rocketgate-topics-") as tmp:
        g = Gateway(tmp, flush=flush, tree=tree)
        prefill(g.data_dir, size)
        began = time.perf_counter()
        g.start()
        started = time.perf_counter() - began
        try:
            client = RawClient(g.bootstrap, timeout=120)
            for i in range(3):  # warm-up: connection, first write
                create(client, f"warm-{i}")
            cpu_before = g.cpu_sample()
            times = [create(client, f"new-{i:05d}") * 1000 for i in range(creates)]
            cpu = cpu_used(cpu_before, g.cpu_sample()) * 1000 / creates
            client.close()
        finally:
            g.stop()
    return times, started, cpu


def total_and_restarts(tree: str, total: int, flush: str = "async") -> dict:
    """Seconds to create `total` topics one by one on a fresh gateway of `tree`, then the seconds to
    restart it after a kill -9 (journal replay) and after a clean stop."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="rocketgate-topics-") as tmp:
        g = Gateway(tmp, flush=flush, tree=tree).start()
        try:
            client = RawClient(g.bootstrap, timeout=120)
            began = time.perf_counter()
            worst = max(create(client, f"t-{i:05d}") for i in range(total))
            out["total_s"] = time.perf_counter() - began
            out["worst_ms"] = worst * 1000
            client.close()
            g.kill9()
            journal = os.path.join(g.data_dir, "config", "topics.journal")
            out["journal_bytes"] = os.path.getsize(journal) if os.path.exists(journal) else 0
            began = time.perf_counter()
            g.start()
            out["restart_after_kill_s"] = time.perf_counter() - began
            g.stop()
            began = time.perf_counter()
            g.start()
            out["restart_after_stop_s"] = time.perf_counter() - began
            client = RawClient(g.bootstrap, timeout=120)
            create(client, "after-restart")
            client.close()
        finally:
            g.stop()
    return out


def concurrent(tree: str, held: int, connections: int, creates: int, flush: str = "async") -> float:
    """Aggregate ms per create: `creates` topics over `connections` connections at once (creates
    queued together share one journal fsync) on a gateway of `tree` holding `held` topics."""
    import threading

    with tempfile.TemporaryDirectory(prefix="rocketgate-topics-") as tmp:
        g = Gateway(tmp, flush=flush, tree=tree)
        prefill(g.data_dir, held)
        g.start()
        try:
            clients = [RawClient(g.bootstrap, timeout=300) for _ in range(connections)]
            for i, c in enumerate(clients):
                create(c, f"warm-{i}")
            each = creates // connections
            threads = [threading.Thread(target=lambda c=c, k=k: [create(c, f"c{k}-{i}") for i in range(each)])
                       for k, c in enumerate(clients)]
            began = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - began
            for c in clients:
                c.close()
        finally:
            g.stop()
    return elapsed / (each * connections) * 1000


def _q(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def markdown(sizes, creates, nrounds, lat: dict, starts: dict, totals: dict | None, trees: dict,
             parallel: dict | None = None, flush: str = "async", cpu: dict | None = None, load: str = "",
             auto: dict | None = None) -> str:
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    load = load or f"{os.getloadavg()[0]:.1f}"
    cpu = cpu or {}
    lines = [f"CreateTopics, one topic per request, one connection (raw Kafka protocol), {creates} creates "
             f"per round on a gateway already holding N topics, {nrounds} alternating rounds; {stamp}, shared "
             f"2-core machine (load average {load}), gateways with `--flush {flush}`. `before` = {trees['before']}, `after` = this tree. "
             "ms per create: median (p90) over all rounds; CPU: the gateway's CPU ms per create (median of the "
             "rounds); start: seconds until the ports listen.", "",
             "| topics held | before: ms per create | after: ms per create | before: CPU | after: CPU "
             "| before: start s | after: start s |",
             "|---|---|---|---|---|---|---|"]
    for n in sizes:
        cells = []
        for side in ("before", "after"):
            xs = lat.get((side, n), [])
            cells.append(f"{rounds.median(xs):.2f} ({_q(xs, 0.9):.2f})" if xs else "n/a")
        for side in ("before", "after"):
            xs = cpu.get((side, n), [])
            cells.append(f"{rounds.median(xs):.2f}" if xs else "n/a")
        for side in ("before", "after"):
            xs = starts.get((side, n), [])
            cells.append(f"{rounds.median(xs):.1f}" if xs else "n/a")
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    if totals:
        lines += ["", f"After, from an empty store: {totals['count']:,} topics created one by one in "
                  f"{totals['total_s']:.1f} s ({totals['total_s'] / totals['count'] * 1000:.2f} ms each, slowest "
                  f"{totals['worst_ms']:.0f} ms); restart after kill -9 (journal of {totals['journal_bytes']:,} bytes "
                  f"replayed) {totals['restart_after_kill_s']:.1f} s, after a clean stop "
                  f"{totals['restart_after_stop_s']:.1f} s."]
    if auto:
        lines += ["", f"Metadata auto-create (v9, allow_auto_topic_creation, one new topic per request, one "
                  f"connection), {auto['count']:,} topics on a fresh gateway: " + "; ".join(
                      f"{side} {auto[side]['total_s']:.1f} s ({auto[side]['total_s'] / auto['count'] * 1000:.2f} ms "
                      f"each; median {auto[side]['median_ms']:.2f}, p90 {auto[side]['p90_ms']:.2f} ms; CPU "
                      f"{auto[side]['cpu_ms']:.2f} ms per create)" for side in ("before", "after")) + "."]
    if parallel:
        lines += ["", f"{parallel['connections']} connections creating topics at once on a gateway holding "
                  f"{parallel['held']:,}: aggregate ms per create, before {parallel['before']:.2f} "
                  f"({parallel['connections'] * 3} creates), after {parallel['after']:.2f} ({parallel['creates']:,} creates)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.topic_scale")
    ap.add_argument("--before", default="/work/main", help="the tree to compare with (cwd of its gateway)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--creates", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--total", type=int, default=10000, help="topics created one by one on this tree (0: skip)")
    ap.add_argument("--auto", type=int, default=5000, help="topics auto-created through Metadata per tree (0: skip)")
    ap.add_argument("--connections", type=int, default=20, help="the concurrent run's connections (0: skip)")
    ap.add_argument("--parallel-creates", type=int, default=2000)
    ap.add_argument("--parallel-held", type=int, default=10000)
    ap.add_argument("--flush", choices=["async", "sync"], default="async", help="the gateways' flush mode")
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    trees = {"before": os.path.abspath(args.before), "after": ROOT}
    lat: dict = {}
    starts: dict = {}
    cpu: dict = {}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for n in sizes:
            for side in rounds.order(r, ("before", "after")):
                times, started, cpu_ms = per_create(trees[side], n, args.creates, args.flush)
                loads.append(os.getloadavg()[0])
                lat.setdefault((side, n), []).extend(times)
                cpu.setdefault((side, n), []).append(cpu_ms)
                starts.setdefault((side, n), []).append(started)
                print(f"round {r} {side:6} {n:>6} topics: median {rounds.median(times):.2f} ms, "
                      f"CPU {cpu_ms:.2f} ms, start {started:.1f} s, load {loads[-1]:.1f}", flush=True)
    totals = None
    if args.total:
        totals = {"count": args.total, **total_and_restarts(ROOT, args.total, args.flush)}
        print(totals, flush=True)
    auto = None
    if args.auto:
        auto = {"count": args.auto}
        for side in ("before", "after"):
            auto[side] = auto_creates(trees[side], args.auto, args.flush)
            loads.append(os.getloadavg()[0])
            print(side, "auto-create", auto[side], flush=True)
    parallel = None
    if args.connections:
        parallel = {"connections": args.connections, "creates": args.parallel_creates, "held": args.parallel_held}
        for side in ("before", "after"):
            parallel[side] = concurrent(trees[side], args.parallel_held, args.connections,
                                        args.parallel_creates if side == "after" else args.connections * 3, args.flush)
        print(parallel, flush=True)
    load = f"{min(loads):.1f}–{max(loads):.1f} during the rounds"
    text = markdown(sizes, args.creates, args.rounds, lat, starts, totals, trees, parallel, args.flush, cpu, load,
                    auto)
    print(text)
    if args.write_docs:
        report.write_marked(DOCS, "topic-scale", text, "## Topic creation at scale (`make bench-topics`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
