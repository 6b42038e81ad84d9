"""`python -m bench.spark_tables`: the same Spark query over a table topic's Iceberg table and over the
stock Kafka connector, for N records (docs/tables.md, "Spark").

One gateway with its HTTP port (the REST catalog). One key_value table topic is filled with
confluent-kafka (N records of --size bytes, a TAGS header cycling over four tags and none), and
the run waits until the table's newest snapshot covers every offset. The query is the per-tag
count and value bytes, three ways: over the connector with spark.source's decoding (`kafka`: tags,
keys, properties from the headers, as the pipelines read), over the connector taking only the TAGS
header (`kafka-tag-only`, the least a connector query can do), and over the table's `tags` and
`value` columns (`table`). Values are random bytes, so Parquet compresses nothing away. Each runs
once to warm up (the answers must agree), then they alternate `--runs` times. Prints the median (min-max) and
the ratio table / connector, and writes bench/results/spark_tables.json.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time

from bench.brokers import ROOT, Gateway, free_port
from bench.spark_read import summarise

TAGS = (b"A", b"B", b"C", b"D", None)


def fill(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "1000"}
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                         "compression.type": "lz4"})
    for i in range(records):
        value = os.urandom(size)  # incompressible: Parquet must not get an easier job than the log
        tag = TAGS[i % len(TAGS)]
        while True:
            try:
                producer.produce(topic, value, headers=[("TAGS", tag)] if tag else None)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300) != 0:
        raise RuntimeError("pre-fill did not complete")


def wait_table(spark, topic: str, catalog: str, records: int, timeout_s: float = 1800) -> float:
    """Seconds until the table's newest snapshot covers `records` offsets in all."""
    from spark import tables

    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        try:
            snaps = tables.snapshots(spark, topic, catalog)
        except Exception:  # noqa: BLE001 - the table is created by the first commit
            snaps = []
        if snaps:
            covered = json.loads(snaps[-1]["summary"].get("rocketgate.next-offsets", "{}"))
            if sum(int(o) for o in covered.values()) >= records:
                return time.perf_counter() - start
        time.sleep(1.0)
    raise TimeoutError(f"the table of {topic} did not reach {records} rows")


def query_kafka(spark, bootstrap: str, topic: str):
    from pyspark.sql import functions as F

    from spark import source

    df = source.read(spark, bootstrap, topic)
    return df.groupBy("tags").agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("bytes"))


def query_kafka_tag_only(spark, bootstrap: str, topic: str):
    from pyspark.sql import functions as F

    from spark import source

    df = spark.read.format("kafka").options(**source.kafka_options(bootstrap, topic)).load()
    tag = F.filter("headers", lambda h: h["key"] == "TAGS")[0]["value"].cast("string").alias("tags")
    return df.groupBy(tag).agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("bytes"))


def query_table(spark, topic: str, catalog: str):
    from pyspark.sql import functions as F

    from spark import tables

    df = tables.raw(spark, topic, catalog=catalog)
    return df.groupBy("tags").agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("bytes"))


def timed(build) -> tuple[float, list]:
    start = time.perf_counter()
    rows = sorted((r["tags"] or "", r["n"], r["bytes"]) for r in build().collect())
    return time.perf_counter() - start, rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.spark_tables", description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--partitions", type=int, default=2, help="topic partitions (= Spark tasks over Kafka)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "spark_tables.json"))
    args = p.parse_args(argv)

    from spark import session, tables

    http = free_port()
    catalog, topic = "rg", f"tables-{int(time.time())}"
    spark = session.build("bench-spark-tables",
                          conf=tables.catalog_conf(f"http://127.0.0.1:{http}/iceberg", catalog))
    with tempfile.TemporaryDirectory(prefix="spark-tables-") as tmp, contextlib.ExitStack() as stack:
        gw = stack.enter_context(Gateway(tmp, extra_args=["--http-port", str(http)]))
        print(f"filling {args.messages:,} x {args.size} B, {args.partitions} partitions", flush=True)
        t0 = time.perf_counter()
        fill(gw.bootstrap, topic, args.messages, args.size, args.partitions)
        fill_s = time.perf_counter() - t0
        lag_s = wait_table(spark, topic, catalog, args.messages)
        print(f"filled in {fill_s:.1f} s, table caught up {lag_s:.1f} s later", flush=True)
        queries = {"kafka": lambda: query_kafka(spark, gw.bootstrap, topic),
                   "kafka-tag-only": lambda: query_kafka_tag_only(spark, gw.bootstrap, topic),
                   "table": lambda: query_table(spark, topic, catalog)}
        answers = {name: timed(q)[1] for name, q in queries.items()}  # warm-up
        if (any(a != answers["table"] for a in answers.values())
                or sum(r[1] for r in answers["table"]) != args.messages):
            raise AssertionError(f"answers differ: {answers}")
        times: dict[str, list[float]] = {name: [] for name in queries}
        for _ in range(args.runs):
            for name, q in queries.items():
                seconds, _rows = timed(q)
                times[name].append(seconds)
                print(f"  {name}: {seconds:.2f} s", flush=True)
    spark.stop()

    results = {name: summarise(t, args.messages, args.size, fill_s) for name, t in times.items()}
    for name, r in results.items():
        print(f"{name:14s} {r['median_s']:6.2f} s ({r['min_s']:.2f}-{r['max_s']:.2f})  {r['rec_per_s']:>11,.0f} rec/s")
    ratio = results["table"]["median_s"] / results["kafka"]["median_s"]
    ratio_min = results["table"]["median_s"] / results["kafka-tag-only"]["median_s"]
    print(f"table / kafka connector time: {ratio:.2f}x (spark.source), {ratio_min:.2f}x (TAGS header only)")
    summary = {"messages": args.messages, "size": args.size, "partitions": args.partitions, "runs": args.runs,
               "table_catch_up_s": lag_s, "results": results, "ratio_table_over_kafka": ratio,
               "ratio_table_over_kafka_tag_only": ratio_min,
               "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
