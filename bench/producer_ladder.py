"""`python -m bench.producer_ladder`: the Tansu-style producer ladder (issue 25).
kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance 4.3.1 from bench/jars) at a
fixed rate per step — 1k, 3k, 5k, 7k, 9k msg/s by default, each `--seconds` long (records = rate ×
seconds) — then unthrottled (`--unthrottled-records`), 1 KiB records, acks=all, 4 partitions, against
`python -m gateway --shards 1`, `--shards 2` and Apache Kafka 4.3.1 (one KRaft node) started side by
side. Each step runs every system once, in an order that rotates per step (interleaved), and prints
the achieved rec/s, p50/p99/p99.9 latency, the CPU the system used meanwhile (every process of its
tree, from /proc) per million messages, and the 1-minute load average at the end of the step."""
from __future__ import annotations

import argparse
import os
import sys

from bench import rounds
from bench.scenarios import java_produce_summary
from bench.shards import measured, run_systems

STEPS = (1000, 3000, 5000, 7000, 9000)


def step(name: str, bootstrap: str, cpu_sample, rate: int, records: int) -> dict:
    out = measured(cpu_sample, records, lambda: java_produce_summary(bootstrap, 1024, "all", records, 300,
                                                                     rate=rate))
    return {"system": name, "rate": rate if rate > 0 else "max", "load": os.getloadavg()[0], **out}


def line(r: dict) -> str:
    return (f"| {r['rate']} | {r['system']} | {r['rec/s']:,.0f} | {r['p50 ms']:.0f} | {r['p99 ms']:.0f} | "
            f"{r['p99.9 ms']:.0f} | {r['CPU s/M msgs']:.1f} | {r['load']:.1f} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.producer_ladder", description=__doc__)
    p.add_argument("--steps", default=",".join(map(str, STEPS)), help="msg/s per throttled step")
    p.add_argument("--seconds", type=float, default=10.0, help="length of a throttled step")
    p.add_argument("--unthrottled-records", type=int, default=100_000, help="0: no unthrottled step")
    p.add_argument("--no-kafka", action="store_true")
    args = p.parse_args(argv)
    plan = [(rate, int(rate * args.seconds)) for rate in map(int, args.steps.split(","))]
    if args.unthrottled_records:
        plan.append((-1, args.unthrottled_records))

    def body(systems: dict) -> None:
        names = tuple(systems)
        for name in names:  # warm-up (JIT, topic creation paths), uncounted
            java_produce_summary(systems[name][0], 1024, "all", 5000, 120, rate=-1)
        print("| msg/s asked | system | rec/s | p50 ms | p99 ms | p99.9 ms | CPU s per M msgs | load |")
        print("|---|---|---|---|---|---|---|---|", flush=True)
        for i, (rate, records) in enumerate(plan):
            for name in rounds.order(i, names):
                print(line(step(name, *systems[name], rate, records)), flush=True)
    return run_systems((1, 2), not args.no_kafka, body)


if __name__ == "__main__":
    sys.exit(main())
