"""tag_metrics: event-time windowed counts and sums per tag, written back to a gateway topic.

Each record of the target topic describes one closed window of one tag: key = the tag, value = JSON
{"tag", "window_start", "window_end", "count", "bytes", "sum"} (bytes: total value size; sum: total of
the values that parse as numbers, null if none), header TAGS = the tag, so RocketMQ consumers can
subscribe by tag. Event time is the record timestamp; a window is emitted once the watermark
(max event time seen - --watermark) passes its end. Written by Spark's Kafka sink with the default
(idempotent) producer. With --catalog the stream reads the topic's Iceberg table instead.
"""
from __future__ import annotations

import json

from pyspark.sql import functions as F

from spark.admin import Admin
from spark.pipelines import common

NO_TAG = ""


def build_parser():
    p = common.parser("tag_metrics", __doc__.splitlines()[0])
    p.add_argument("--topic", required=True, help="topic or filtered view to measure")
    p.add_argument("--target", required=True, help="topic the metrics are written to (created if missing)")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (keep it to resume)")
    p.add_argument("--window", default="1 minute", help="tumbling window length, e.g. '10 seconds'")
    p.add_argument("--watermark", default="1 minute", help="how late an event may arrive")
    p.add_argument("--starting", default="earliest", choices=["earliest", "latest"])
    p.add_argument("--trigger-seconds", type=float, default=5.0, help="micro-batch interval")
    p.add_argument("--once", action="store_true",
                   help="process everything available now, then exit (availableNow trigger)")
    return p


def metrics_frame(df, window: str, watermark: str):
    """Kafka sink rows (key, value, headers) for each closed (tag, window)."""
    number = F.expr("try_cast(cast(value AS string) AS double)")
    agg = (df.withWatermark("timestamp", watermark)
           .groupBy(F.window("timestamp", window).alias("w"), F.coalesce("tags", F.lit(NO_TAG)).alias("tag"))
           .agg(F.count(F.lit(1)).alias("count"), F.sum(F.length("value")).alias("bytes"),
                F.sum(number).alias("sum")))
    body = F.to_json(F.struct(
        "tag", F.date_format("w.start", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("window_start"),
        F.date_format("w.end", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("window_end"),
        "count", "bytes", "sum"))
    tag_header = F.array(F.struct(F.lit("TAGS").alias("key"), F.col("tag").cast("binary").alias("value")))
    return agg.select(F.col("tag").cast("binary").alias("key"), body.cast("binary").alias("value"),
                      F.when(F.col("tag") != NO_TAG, tag_header).alias("headers"))


def once_summary(progress: list[dict], args) -> str:
    """What a --once run did, from its micro-batches' progress: the windows written, or why none was
    (nothing new to read, or every window still open because the watermark has not passed its end)
    and how to get output."""
    read = sum(p.get("numInputRows") or 0 for p in progress)
    written = sum(max(0, (p.get("sink") or {}).get("numOutputRows", -1)) for p in progress)
    last = progress[-1] if progress else {}
    states = last.get("stateOperators") or [{}]
    still_open = states[0].get("numRowsTotal", 0)
    watermark = (last.get("eventTime") or {}).get("watermark", "none yet")
    if written:
        return (f"tag_metrics: wrote {written} window(s) to {args.target}; {still_open} window(s) still open "
                f"(watermark {watermark}).")
    if not read and not still_open:
        return (f"tag_metrics --once wrote nothing: no new records in {args.topic} since the last run "
                f"(checkpoint {args.checkpoint}). Produce to {args.topic}, or start over with a new --checkpoint "
                f"and --starting earliest.")
    return (f"tag_metrics --once wrote nothing to {args.target} yet: {read} record(s) read, {still_open} window(s) "
            f"still open. A window is written once the watermark (the newest event time seen minus --watermark "
            f"{args.watermark}; now {watermark}) passes the window's end, so the newest events keep their windows "
            f"open. To get output: produce events later than a window's end plus {args.watermark}, run again with a "
            f"smaller --watermark or --window, or run without --once to keep it running; the checkpoint "
            f"({args.checkpoint}) keeps the open windows between runs.")


def run(argv=None) -> None:
    args = build_parser().parse_args(argv)
    spark = common.start(args, "tag_metrics", [args.topic])
    with Admin(spark, args.bootstrap) as admin:
        admin.ensure_topic(args.target)
    df = common.read(spark, args, args.topic, stream=True, starting=args.starting,
                     options=common.stream_options(args))
    writer = (metrics_frame(df, args.window, args.watermark).writeStream.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap).option("topic", args.target)
              .option("checkpointLocation", args.checkpoint).outputMode("append"))
    writer = (writer.trigger(availableNow=True) if args.once
              else writer.trigger(processingTime=f"{args.trigger_seconds} seconds"))
    query = writer.start()
    common.watch(query)
    if args.once:
        print(once_summary([json.loads(p.json) for p in query.recentProgress], args), flush=True)


if __name__ == "__main__":
    common.main(run)
