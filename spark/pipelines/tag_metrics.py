"""tag_metrics: event-time windowed counts and sums per tag, written back to a gateway topic.

Each record of the target topic describes one closed window of one tag: key = the tag, value = JSON
{"tag", "window_start", "window_end", "count", "bytes", "sum"} (bytes: total value size; sum: total of
the values that parse as numbers, null if none), header TAGS = the tag, so RocketMQ consumers can
subscribe by tag. Event time is the record timestamp; a window is emitted once the watermark
(max event time seen - --watermark) passes its end. Written by Spark's Kafka sink with the default
(idempotent) producer. With --catalog the stream reads the topic's Iceberg table instead.
"""
from __future__ import annotations

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
    common.watch(writer.start())


if __name__ == "__main__":
    common.main(run)
