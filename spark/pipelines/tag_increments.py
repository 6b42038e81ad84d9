"""tag_increments: per-tag totals of what a table topic gained since the last run (Iceberg incremental read).

What a table makes easy: no offsets and no checkpoint to manage. Each run reads exactly the rows the
table's snapshots appended after the snapshot the previous run ended at, up to the current snapshot
(Iceberg's incremental read: start-snapshot-id exclusive, end-snapshot-id inclusive; the first run
reads the whole table as of its current snapshot), aggregates them by RocketMQ tag and appends one row
per tag to the Parquet --output: from_snapshot, to_snapshot, to_committed_at, tag ("" for untagged),
count, bytes (total value size), sum (of the values that parse as numbers), first_offset and
last_offset (the least and greatest offset over all partitions), first_timestamp, last_timestamp. The output is its own state: the
next run starts at the newest to_snapshot in it, and a run repeated after a crash rewrites its own
to_snapshot partition (dynamic overwrite), so every increment is counted once.
"""
from __future__ import annotations

import os

from pyspark.sql import functions as F

from spark import tables
from spark.admin import PipelineError
from spark.pipelines import common

NO_TAG = ""


def build_parser():
    p = common.parser("tag_increments", __doc__.splitlines()[0])
    p.add_argument("--topic", required=True, help="table topic to measure")
    p.add_argument("--output", required=True, help="Parquet output directory (also where the next run starts)")
    p.add_argument("--to-snapshot", type=int, default=None, help="end snapshot (default: the current one)")
    return p


def aggregate(df):
    """One row per tag of `df` (source.read's columns): the aggregation the test also runs over the
    Kafka connector, row for row."""
    number = F.expr("try_cast(cast(value AS string) AS double)")
    return (df.groupBy(F.coalesce("tags", F.lit(NO_TAG)).alias("tag"))
            .agg(F.count(F.lit(1)).alias("count"), F.sum(F.length("value")).alias("bytes"),
                 F.sum(number).alias("sum"), F.min("offset").alias("first_offset"),
                 F.max("offset").alias("last_offset"), F.min("timestamp").alias("first_timestamp"),
                 F.max("timestamp").alias("last_timestamp")))


def last_run(spark, output: str) -> int | None:
    """The to_snapshot of the newest increment already in `output` (None before the first run)."""
    if not os.path.isdir(output) or not any(n.startswith("to_snapshot=") for n in os.listdir(output)):
        return None
    row = (spark.read.parquet(output).orderBy(F.col("to_committed_at").desc())
           .select("to_snapshot").first())
    return None if row is None else int(row["to_snapshot"])


def increment(spark, catalog: str, topic: str, start: int | None, end: int):
    """The rows appended after snapshot `start` (exclusive; None = the table's beginning) up to `end`."""
    options = {"versionAsOf": str(end)} if start is None else {
        "start-snapshot-id": str(start), "end-snapshot-id": str(end)}
    return tables.read(spark, topic, catalog=catalog, options=options)


def run(argv=None) -> None:
    args = build_parser().parse_args(argv)
    if not args.catalog:
        raise PipelineError("tag_increments reads the topic's Iceberg table: give --catalog")
    spark = common.start(args, "tag_increments", [args.topic])
    catalog = common.catalog_name(args.catalog)
    snaps = tables.snapshots(spark, args.topic, catalog)
    if not snaps:
        print("no snapshot yet", flush=True)
        return
    by_id = {s["snapshot_id"]: s for s in snaps}
    end = by_id.get(args.to_snapshot) if args.to_snapshot is not None else snaps[-1]
    if end is None:
        raise PipelineError(f"no snapshot {args.to_snapshot} in the table of {args.topic!r}")
    start = last_run(spark, args.output)
    if start == end["snapshot_id"]:
        print(f"no new snapshot after {start}", flush=True)
        return
    rows = (aggregate(increment(spark, catalog, args.topic, start, end["snapshot_id"]))
            .withColumn("from_snapshot", F.lit(start).cast("long"))
            .withColumn("to_committed_at", F.lit(end["committed_at"]).cast("timestamp"))
            .withColumn("to_snapshot", F.lit(end["snapshot_id"]).cast("long")).cache())
    (rows.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("to_snapshot")
     .parquet(args.output))
    total = sum(r["count"] for r in rows.select("count").collect())
    print(f"snapshots {start if start is not None else '-'}..{end['snapshot_id']}: {total} rows, "
          f"{rows.count()} tags", flush=True)
    rows.unpersist()


if __name__ == "__main__":
    common.main(run)
