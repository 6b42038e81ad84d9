"""`python -m bench.shard_traffic`: the inputs of the shard scaling model (docs/performance.md,
"Shards: a scaling model"). One `python -m gateway --shards N` (default 2) with its HTTP port; a
produce row (ProducerPerformance, 1 KiB, acks=all, 4 partitions) and a consume row
(ConsumerPerformance, one group, auto-commit, of a topic pre-filled with as many records). For each
row: the CPU of every process of the tree (each shard, etcd, the supervisor) per million messages,
from /proc; the client requests each shard answered, by API (shard 0's merged `/metrics`,
`rocketgate_requests_total`); and the requests etcd served, by method (etcd's own `/metrics`,
`grpc_server_handled_total`) — the cross-shard traffic, since shards share nothing but etcd (a
shard never forwards a client's request to another shard: produce and fetch go to the owner, group
commits reach the other shards through etcd's watch)."""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench.scenarios import java_consume, java_produce_summary, prefill
from bench.shards import run_systems, tree_pids
from bench.procstat import thread_cpu_ns
from gateway.process_tree import free_port


def counters(url: str, name: str, labels: tuple[str, ...]) -> collections.Counter:
    """Sum of the counter `name` (without `_total`) by `labels`, from a Prometheus text page."""
    out = collections.Counter()
    for family in text_string_to_metric_families(httpx.get(url, timeout=10).text):
        if family.name == name:
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    out[tuple(sample.labels.get(label, "") for label in labels)] += sample.value
    return out


def process_role(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return "gone"
    if os.path.basename(args[0]) == "etcd":
        return "etcd"
    for i, arg in enumerate(args[:-1]):
        if arg == "--data-dir" and os.path.basename(args[i + 1]).startswith("shard-"):
            return os.path.basename(args[i + 1])
    return "supervisor"


def cpu_by_role(root: int) -> collections.Counter:
    """CPU ns by process role; with `--shards 1` the one process is the gateway, no supervisor."""
    out, pids = collections.Counter(), tree_pids(root)
    for pid in pids:
        role = process_role(pid) if len(pids) > 1 else "gateway"
        out[role] += sum(thread_cpu_ns(pid).values())
    return out


def observe(root: int, http: str, etcd: str | None, records: int, run) -> None:
    cpu0, req0 = cpu_by_role(root), counters(f"{http}/metrics", "rocketgate_requests", ("shard", "request"))
    etcd0 = counters(f"{etcd}/metrics", "grpc_server_handled", ("grpc_method",)) if etcd else {}
    started = time.monotonic()
    result = run()
    seconds = time.monotonic() - started
    cpu1, req1 = cpu_by_role(root), counters(f"{http}/metrics", "rocketgate_requests", ("shard", "request"))
    etcd1 = counters(f"{etcd}/metrics", "grpc_server_handled", ("grpc_method",)) if etcd else {}
    print(f"  {records} messages in {seconds:.1f} s ({result.get('rec/s', records / seconds):,.0f} rec/s), "
          f"load {os.getloadavg()[0]:.1f}")
    for role in sorted(cpu1):
        print(f"  CPU {role}: {(cpu1[role] - cpu0[role]) / 1e9 / records * 1e6:.2f} s per million messages")
    requests = {k: v - req0.get(k, 0) for k, v in req1.items() if v - req0.get(k, 0) > 0}
    for (shard, request), n in sorted(requests.items()):
        print(f"  shard {shard} {request}: {n:.0f} ({n / records * 1000:.2f} per 1 000 messages)")
    rpcs = {k[0]: v - etcd0.get(k, 0) for k, v in etcd1.items() if v - etcd0.get(k, 0) > 0}
    total = sum(requests.values())
    print(f"  etcd RPCs: {dict(sorted(rpcs.items()))}: {sum(rpcs.values()):.0f} against {total:.0f} client "
          f"requests ({sum(rpcs.values()) / max(total, 1) * 100:.2f} %)", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.shard_traffic", description=__doc__)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--records", type=int, default=100_000)
    args = p.parse_args(argv)
    http_port = free_port()

    def body(systems: dict) -> None:
        (bootstrap, sample), = systems.values()
        root = next(iter(sample()))[0]  # the supervisor's pid: the first of its tree
        etcd = _etcd_url(root)
        http = f"http://127.0.0.1:{http_port}"
        java_produce_summary(bootstrap, 1024, "all", 5000, 120)  # warm-up
        print(f"produce, --shards {args.shards}:")
        observe(root, http, etcd, args.records,
                lambda: java_produce_summary(bootstrap, 1024, "all", args.records, 300))
        topic = prefill(bootstrap, args.records, 1024)
        print(f"consume (one group), --shards {args.shards}:")
        observe(root, http, etcd, args.records, lambda: java_consume(bootstrap, topic, args.records))
    return run_systems((args.shards,), False, body, extra=("--http-port", str(http_port)))


def _etcd_url(root: int) -> str | None:
    """The private etcd's client URL, from a shard's `--cluster etcd://...` argument."""
    for pid in tree_pids(root):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "--cluster" in args:
            return "http://" + args[args.index("--cluster") + 1].removeprefix("etcd://").split(",")[0]
    return None  # --shards 1: one process, no etcd


if __name__ == "__main__":
    sys.exit(main())
