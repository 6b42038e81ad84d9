"""replay: re-produce an offset or time range of a topic (e.g. a %DLQ% topic) to a target topic.

A batch job: reads [--from, --to) of every partition (offsets, or epoch-ms / ISO-8601 times via
startingOffsetsByTimestamp / endingOffsetsByTimestamp) and writes key, value and headers unchanged
(same order of headers, binary values, repeats) with Spark's Kafka sink. With --keep-partition each
record goes to the partition it came from (the target needs at least as many partitions). With --catalog the range is read from the topic's Iceberg
table: headers come from its headers column, a map, so a repeated header name keeps its last value.
"""
from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import functions as F

from spark.admin import Admin, PipelineError
from spark.pipelines import common


def parse_time(text: str) -> int:
    """Epoch milliseconds from digits or an ISO-8601 time (UTC unless it says otherwise)."""
    if text.isdigit():
        return int(text)
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise PipelineError(f"bad time {text!r}: use epoch milliseconds or ISO-8601") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1000)


def build_parser():
    p = common.parser("replay", __doc__.splitlines()[0])
    p.add_argument("--topic", required=True, help="source topic, e.g. '%%DLQ%%my-group'")
    p.add_argument("--target", required=True, help="topic to re-produce to (created if missing)")
    p.add_argument("--from-offset", type=int, default=None, help="first offset, every partition")
    p.add_argument("--to-offset", type=int, default=None, help="end offset (exclusive), every partition")
    p.add_argument("--from-time", default=None, help="first record time (epoch ms or ISO-8601)")
    p.add_argument("--to-time", default=None, help="end time (exclusive)")
    p.add_argument("--keep-partition", action="store_true", help="write to the source partition number")
    return p


def offset_range(args, partitions: int) -> dict:
    """source.read() keyword arguments for the requested range."""
    if args.from_offset is not None and args.from_time is not None:
        raise PipelineError("give --from-offset or --from-time, not both")
    if args.to_offset is not None and args.to_time is not None:
        raise PipelineError("give --to-offset or --to-time, not both")
    every = range(partitions)
    out: dict = {"options": {}}
    if args.from_offset is not None:
        out["starting"] = {p: args.from_offset for p in every}
    elif args.from_time is not None:
        out["starting_ts"] = {p: parse_time(args.from_time) for p in every}
        out["options"]["startingOffsetsByTimestampStrategy"] = "latest"
    if args.to_offset is not None:
        out["ending"] = {p: args.to_offset for p in every}
    elif args.to_time is not None:
        out["ending_ts"] = {p: parse_time(args.to_time) for p in every}
    return out


def table_range(args):
    """The same range over the table's offset and timestamp columns (--catalog). A time bound is the
    record timestamp itself: equal to the Kafka connector's offset-by-time lookup when the
    timestamps rise with the offsets, as they do for log-append time and most producers."""
    cond = F.lit(True)
    if args.from_offset is not None:
        cond &= F.col("offset") >= args.from_offset
    elif args.from_time is not None:
        cond &= F.col("timestamp") >= F.timestamp_millis(F.lit(parse_time(args.from_time)))
    if args.to_offset is not None:
        cond &= F.col("offset") < args.to_offset
    elif args.to_time is not None:
        cond &= F.col("timestamp") < F.timestamp_millis(F.lit(parse_time(args.to_time)))
    return cond


def run(argv=None) -> None:
    args = build_parser().parse_args(argv)
    spark = common.start(args, "replay", [args.topic])
    with Admin(spark, args.bootstrap) as admin:
        partitions = admin.partitions(args.topic)
        admin.ensure_topic(args.target, partitions if args.keep_partition else 1)
        if args.keep_partition and admin.partitions(args.target) < partitions:
            raise PipelineError(f"--keep-partition: {args.target} has fewer partitions than {args.topic}")
    rng = offset_range(args, partitions)
    df = (common.read(spark, args, args.topic).where(table_range(args)) if args.catalog
          else common.read(spark, args, args.topic, **rng)).cache()
    summary = df.groupBy("partition").agg(F.count(F.lit(1)).alias("rows"), F.min("offset").alias("first"),
                                          F.max("offset").alias("last")).collect()
    cols = ["key", "value", "headers"] + (["partition"] if args.keep_partition else [])
    (df.select(*cols).write.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
     .option("topic", args.target).save())
    rows = sum(r["rows"] for r in summary)
    ranges = " ".join(f"{args.topic}/{r['partition']}:{r['first']}..{r['last'] + 1}" for r in sorted(summary))
    print(f"replayed {rows} rows, offsets {ranges or '-'}, to {args.target}", flush=True)
    df.unpersist()


if __name__ == "__main__":
    common.main(run)
