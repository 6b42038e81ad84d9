"""schema_avro: decode a schema-framed Avro topic by the registry's schemas and write it framed again.

A batch job over a topic whose values are Confluent-framed Avro (magic byte 0, 4-byte schema id, Avro
binary). The driver reads the distinct ids of the range, fetches each writer schema by id from the
schema registry and decodes each id's records with its own `from_avro` (writer schema = the id's,
reader schema = the latest of --reader-subject, default `<topic>-value`, so every version lands in
one struct type). --where filters on the decoded fields. The rows are encoded with `to_avro` by the
reader schema, registered under --target-subject (default `<target>-value`), and written to --target
with that id's 5-byte frame in front; keys and headers pass unchanged. Values that are not framed are
counted and left out; an id the registry does not know, or a payload its schema cannot read, ends the
job with an error (nothing is dropped silently).
"""
from __future__ import annotations

import glob
import os
from functools import reduce

from pyspark.sql import DataFrame, functions as F

from spark import source
from spark.admin import Admin, PipelineError
from spark.pipelines import common
from spark.registry import Registry
from spark.session import JARS_DIR, ConnectorMissing

FRAME_BYTES = 5


def build_parser():
    p = common.parser("schema_avro", __doc__.splitlines()[0])
    p.add_argument("--registry", required=True, metavar="URL", help="schema registry, e.g. http://127.0.0.1:8081")
    p.add_argument("--topic", required=True, help="source topic (values framed Avro)")
    p.add_argument("--target", required=True, help="topic to write the framed Avro to (created if missing)")
    p.add_argument("--reader-subject", default=None, help="subject whose latest schema reads every id "
                   "(default: <topic>-value)")
    p.add_argument("--target-subject", default=None, help="subject of the written schema (default: <target>-value)")
    p.add_argument("--where", default=None, help="SQL condition on the decoded fields, e.g. 'age >= 18'")
    return p


def schema_ids(df: DataFrame) -> DataFrame:
    """`value` split into `schema_id` (null when the value is not framed) and `payload`."""
    framed = (F.length("value") >= FRAME_BYTES) & (F.substring("value", 1, 1) == F.unhex(F.lit("00")))
    schema_id = F.conv(F.hex(F.substring("value", 2, 4)), 16, 10).cast("long")
    return df.select("*", F.when(framed, schema_id).alias("schema_id"),
                     F.expr(f"substring(value, {FRAME_BYTES + 1}, length(value) - {FRAME_BYTES})").alias("payload"))


def frame(schema_id: int):
    """The 5-byte Confluent header of `schema_id` as a binary literal."""
    return F.unhex(F.lit("00" + format(schema_id, "08x")))


def decode(df: DataFrame, writers: dict[int, str], reader: str) -> DataFrame:
    """One from_avro per writer id (FAILFAST: a payload its schema cannot read fails the job)."""
    from pyspark.sql.avro.functions import from_avro

    parts = [df.where(F.col("schema_id") == schema_id)
             .select("key", "headers", from_avro("payload", writer, {"avroSchema": reader, "mode": "FAILFAST"})
                     .alias("record"))
             for schema_id, writer in sorted(writers.items())]
    return reduce(DataFrame.unionByName, parts)


def where(decoded: DataFrame, condition: str) -> DataFrame:
    """Rows whose decoded fields meet the SQL `condition` (the fields are named as in the schema)."""
    fields = decoded.select("record.*").columns
    flat = decoded.select(F.col("key").alias("__kafka_key"), F.col("headers").alias("__kafka_headers"), "record.*")
    return flat.where(F.expr(condition)).select(F.col("__kafka_key").alias("key"),
                                                F.col("__kafka_headers").alias("headers"),
                                                F.struct(*[F.col(f"`{f}`") for f in fields]).alias("record"))


def run(argv=None) -> None:
    args = build_parser().parse_args(argv)
    if not glob.glob(os.path.join(JARS_DIR, "spark-avro_*.jar")):
        raise ConnectorMissing(f"spark-avro not found in {JARS_DIR}: run `make spark-jars`")
    registry = Registry(args.registry)
    reader = registry.latest(args.reader_subject or f"{args.topic}-value")
    if reader.get("schemaType", "AVRO") != "AVRO":
        raise PipelineError(f"the reader subject's latest schema is {reader['schemaType']}, not AVRO")
    spark = common.start(args, "schema_avro", [args.topic])
    with Admin(spark, args.bootstrap) as admin:
        admin.ensure_topic(args.target, 1)
    df = schema_ids(source.read(spark, args.bootstrap, args.topic)).cache()
    ids = sorted(r["schema_id"] for r in df.select("schema_id").where("schema_id IS NOT NULL").distinct().collect())
    writers = {i: registry.avro_by_id(i) for i in ids}
    skipped = df.where("schema_id IS NULL").count()
    if not writers:
        print(f"decoded 0 framed rows, skipped {skipped} unframed", flush=True)
        return
    decoded = decode(df, writers, reader["schema"])
    if args.where:
        decoded = where(decoded, args.where)
    target_id = registry.register(args.target_subject or f"{args.target}-value", reader["schema"])
    from pyspark.sql.avro.functions import to_avro

    out = decoded.select("key", "headers", F.concat(frame(target_id), to_avro("record", reader["schema"]))
                         .alias("value")).cache()
    rows = out.count()
    (out.write.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
     .option("topic", args.target).save())
    framed = df.count() - skipped
    print(f"decoded {framed} framed rows of schema ids {ids} with {args.reader_subject or args.topic + '-value'} "
          f"v{reader['version']}, skipped {skipped} unframed, wrote {rows} rows with schema id {target_id} "
          f"to {args.target}", flush=True)
    out.unpersist()
    df.unpersist()


if __name__ == "__main__":
    common.main(run)
