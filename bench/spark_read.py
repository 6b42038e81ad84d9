"""`python -m bench.spark_read`: Spark batch read of N messages through the stock Kafka connector,
from the gateway and from a real Apache Kafka broker in the same run (same SparkSession, same data).

Both systems run side by side (an idle broker costs little CPU): each is pre-filled with librdkafka and
read once to warm up, then the reads alternate between them `--runs` times. A read is `sum(length(value))` over the whole topic, so every record
is fetched and materialised. Prints the median (min-max) seconds and the ratio gateway / Kafka, and
writes bench/results/spark_read.json. The bar: gateway <= 1.25x Kafka's time.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time

from bench import scenarios as sc
from bench.brokers import ROOT, Gateway, KafkaBroker

BAR = 1.25


def fill(bootstrap: str, records: int, size: int, partitions: int) -> str:
    topic = sc.new_topic("spark")
    sc.create_topics(bootstrap, [topic], partitions)
    r = sc.kafka_client(1800, cmd="produce", bootstrap=bootstrap, topic=topic, size=size, acks="1",
                        seconds=1500, max_records=records)
    if r["records"] < records:
        raise sc.Unavailable(f"pre-fill wrote {r['records']} of {records}: {r['errors']}")
    return topic


def timed_read(spark, bootstrap: str, topic: str) -> tuple[float, int, int]:
    from pyspark.sql import functions as F

    start = time.perf_counter()
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).load())
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0]
    return time.perf_counter() - start, row["n"], row["bytes"]


def summarise(times: list[float], records: int, size: int, fill_s: float) -> dict:
    med = statistics.median(times)
    return {"median_s": med, "min_s": min(times), "max_s": max(times), "runs": times,
            "rec_per_s": records / med, "MB_per_s": records * size / med / 1e6, "fill_s": fill_s}


def measure(spark, systems: dict, records: int, size: int, partitions: int, runs: int) -> dict:
    """Fill every system, then alternate the reads (A B A B ...) so drift in the machine's load
    hits all systems alike."""
    topics, fill_s, times = {}, {}, {name: [] for name in systems}
    for name, system in systems.items():
        print(f"{name}: filling {records:,} x {size} B, {partitions} partitions", flush=True)
        t0 = time.perf_counter()
        topics[name] = fill(system.bootstrap, records, size, partitions)
        fill_s[name] = time.perf_counter() - t0
        timed_read(spark, system.bootstrap, topics[name])  # warm-up: JIT, codegen, connections
    for _ in range(runs):
        for name, system in systems.items():
            seconds, n, nbytes = timed_read(spark, system.bootstrap, topics[name])
            if n < records or nbytes != n * size:  # the loader sends one extra warm-up record
                raise AssertionError(f"{name}: read {n} records / {nbytes} bytes, wrote {records}")
            times[name].append(seconds)
            print(f"  {name}: {seconds:.2f} s ({records / seconds:,.0f} rec/s)", flush=True)
    return {name: summarise(times[name], records, size, fill_s[name]) for name in systems}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.spark_read", description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--partitions", type=int, default=2, help="topic partitions (= Spark tasks)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--systems", default="kafka,gateway")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "spark_read.json"))
    args = p.parse_args(argv)

    from spark import session

    spark = session.build("bench-spark-read")
    with tempfile.TemporaryDirectory(prefix="spark-read-") as tmp, contextlib.ExitStack() as stack:
        systems = {}
        for name in args.systems.split(","):
            cls = {"kafka": KafkaBroker, "gateway": Gateway}[name]
            systems[name] = stack.enter_context(cls(os.path.join(tmp, name)))
        results = measure(spark, systems, args.messages, args.size, args.partitions, args.runs)
    spark.stop()

    for name, r in results.items():
        print(f"{name:8s} {r['median_s']:7.2f} s ({r['min_s']:.2f}-{r['max_s']:.2f})  "
              f"{r['rec_per_s']:>11,.0f} rec/s  {r['MB_per_s']:7.1f} MB/s")
    summary = {"messages": args.messages, "size": args.size, "partitions": args.partitions,
               "runs": args.runs, "results": results, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if "kafka" in results and "gateway" in results:
        ratio = results["gateway"]["median_s"] / results["kafka"]["median_s"]
        summary["ratio_gateway_over_kafka"] = ratio
        print(f"gateway / kafka time: {ratio:.2f}x (bar <= {BAR}x): {'PASS' if ratio <= BAR else 'FAIL'}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
