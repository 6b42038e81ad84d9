"""archive: stream a topic (or filtered view) into Parquet, partitioned by date and tag.

The file sink and the checkpoint together give exactly-once output: stopping and restarting with
the same --checkpoint continues at the next unread offset, with no gap and no duplicate (Spark
readers of the output directory see only committed batches, via its _spark_metadata log).
With --catalog the stream reads the topic's Iceberg table (its appended snapshots) instead.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from spark.pipelines import common


def build_parser():
    p = common.parser("archive", __doc__.splitlines()[0])
    p.add_argument("--topic", required=True, help="topic or filtered view to archive")
    p.add_argument("--output", required=True, help="Parquet output directory")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (keep it to resume)")
    p.add_argument("--starting", default="earliest", choices=["earliest", "latest"],
                   help="where a new checkpoint starts (ignored when resuming)")
    p.add_argument("--max-offsets", type=int, default=None,
                   help="cap on records per micro-batch (maxOffsetsPerTrigger)")
    p.add_argument("--trigger-seconds", type=float, default=5.0, help="micro-batch interval")
    p.add_argument("--once", action="store_true",
                   help="process everything available now, then exit (availableNow trigger)")
    return p


def archive_frame(df):
    """The archived columns: partition columns `date` (UTC, from the record timestamp) and `tag`."""
    return df.select("topic", "partition", "offset", "timestamp", "key", "value", "headers", "keys",
                     "properties", F.to_date("timestamp").alias("date"), F.col("tags").alias("tag"))


def run(argv=None) -> None:
    args = build_parser().parse_args(argv)
    spark = common.start(args, "archive", [args.topic])
    df = common.read(spark, args, args.topic, stream=True, starting=args.starting,
                     options=common.stream_options(args, args.max_offsets))
    writer = (archive_frame(df).writeStream.format("parquet").partitionBy("date", "tag")
              .option("path", args.output).option("checkpointLocation", args.checkpoint)
              .outputMode("append"))
    writer = (writer.trigger(availableNow=True) if args.once
              else writer.trigger(processingTime=f"{args.trigger_seconds} seconds"))
    common.watch(writer.start())


if __name__ == "__main__":
    common.main(run)
