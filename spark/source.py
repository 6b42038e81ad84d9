"""Read a gateway topic (or filtered view) with Spark's stock Kafka source, headers decoded.

A filtered view is an ordinary topic to Kafka clients, so reading one is `read(spark, bs, view)`.
Besides the standard Kafka columns (key, value, topic, partition, offset, timestamp,
timestampType, headers) the result has:
  tags        string               the `TAGS` header (the RocketMQ tag), null if none
  keys        array<string>        the `KEYS` header split on spaces, else the UTF-8 record key
  properties  map<string,string>   every header as UTF-8 text (last one wins for repeated names)
"""
from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
DECODED_COLUMNS = ["tags", "keys", "properties"]

def _offsets_json(topic: str, spec: dict[int, int]) -> str:
    return json.dumps({topic: {str(p): int(o) for p, o in spec.items()}})


def kafka_options(bootstrap: str, topic: str, *, starting=None, ending=None,
                  starting_ts=None, ending_ts=None, options: dict[str, str] | None = None) -> dict[str, str]:
    """Options for format("kafka"). `starting`/`ending`: "earliest" | "latest" | {partition: offset}
    (-2 earliest, -1 latest); `*_ts`: epoch-ms timestamps, an int for all partitions or
    {partition: ts}. Extra `options` win (e.g. kafka.isolation.level)."""
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "includeHeaders": "true"}
    for name, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if spec is not None:
            opts[name] = spec if isinstance(spec, str) else _offsets_json(topic, spec)
    for prefix, ts in (("starting", starting_ts), ("ending", ending_ts)):
        if isinstance(ts, dict):
            opts[f"{prefix}OffsetsByTimestamp"] = _offsets_json(topic, ts)
        elif ts is not None:
            opts[f"{prefix}Timestamp"] = str(int(ts))
    opts.update(options or {})
    return opts


def _utf8(col: Column) -> Column:
    return col.cast("string")


def decode(df: DataFrame) -> DataFrame:
    """Add tags/keys/properties columns from the Kafka headers (needs includeHeaders=true)."""
    headers = F.coalesce(F.col("headers"), F.array().cast("array<struct<key:string,value:binary>>"))
    # Keep the last occurrence of each header name so map construction never sees duplicates.
    last = F.filter(headers, lambda h, i: ~F.exists(F.slice(headers, i + 2, F.greatest(F.size(headers), F.lit(1))),
                                                     lambda x: x["key"] == h["key"]))
    props = F.map_from_entries(F.transform(last, lambda h: F.struct(h["key"].alias("key"),
                                                                    _utf8(h["value"]).alias("value"))))
    keys_header = props.getItem("KEYS")
    keys = (F.when(keys_header.isNotNull(), F.filter(F.split(keys_header, " "), lambda k: k != ""))
            .when(F.col("key").isNotNull(), F.array(_utf8(F.col("key"))))
            .otherwise(F.array().cast("array<string>")))
    return df.select(*KAFKA_COLUMNS, props.getItem("TAGS").alias("tags"), keys.alias("keys"),
                     props.alias("properties"))


def read(spark: SparkSession, bootstrap: str, topic: str, *, stream: bool = False,
         starting=None, ending=None, starting_ts=None, ending_ts=None,
         options: dict[str, str] | None = None) -> DataFrame:
    """A batch (default) or streaming DataFrame over `topic`, decoded (see module doc)."""
    opts = kafka_options(bootstrap, topic, starting=starting, ending=ending,
                         starting_ts=starting_ts, ending_ts=ending_ts, options=options)
    reader = spark.readStream if stream else spark.read
    return decode(reader.format("kafka").options(**opts).load())
