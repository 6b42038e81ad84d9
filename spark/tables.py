"""Read a table topic (docs/tables.md) with Spark's Iceberg runtime instead of the Kafka connector.

The gateway serves an Iceberg REST catalog at http://HOST:HTTP_PORT/iceberg; each table topic is the
table `rocketgate.<topic>` there. `catalog_conf()` is the Spark configuration for that catalog and
`read()` returns the same columns as `source.read()` (key, value, topic, partition, offset, timestamp,
timestampType, headers, tags, keys, properties), so a pipeline's transformation is the same whichever
way it reads; `raw()` is the table with the gateway's own columns.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from spark.source import decode

CATALOG = "rg"
NAMESPACE = "rocketgate"
HEADER_TYPE = "array<struct<key:string,value:binary>>"


def catalog_conf(uri: str, name: str = CATALOG, **extra: str) -> dict[str, str]:
    """Spark configuration for an Iceberg REST catalog `name` at `uri` (the gateway's /iceberg); the
    data files are the file:// or s3:// paths the catalog hands out (s3: S3FileIO, configured by the
    catalog). `extra`: more catalog properties (e.g.
    type="hadoop", warehouse=DIR for a copied warehouse with no gateway)."""
    # No table cache: the gateway commits a snapshot every commit interval, and Iceberg's cache (kept
    # warm by every access) would go on serving the snapshot first loaded.
    settings = {"type": "rest", "uri": uri.rstrip("/"), "cache-enabled": "false", **extra}
    if settings["type"] != "rest":
        settings.pop("uri")
    conf = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog"}
    conf.update({f"spark.sql.catalog.{name}.{k}": v for k, v in settings.items()})
    return conf


def iceberg_name(topic: str) -> str:
    """The table name the gateway gives a topic (docs/tables.md): letters, digits, '_' and '-' kept,
    any other character (a '.', RocketMQ's '%') as ~XX per UTF-8 byte."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else
                   "".join(f"~{b:02x}" for b in ch.encode()) for ch in topic)


def table_name(topic: str, catalog: str = CATALOG, namespace: str = NAMESPACE) -> str:
    """The multipart identifier of a topic's table, each part in backticks (a '-' is not an identifier)."""
    return ".".join(f"`{part}`" for part in (catalog, namespace, iceberg_name(topic)))


def _headers(col: Column, data_type) -> Column:
    """Kafka-style headers (array of key/value structs) from the table's headers column (a map)."""
    if isinstance(data_type, MapType):
        col = F.transform(F.map_entries(col), lambda e: F.struct(e["key"].alias("key"),
                                                                  e["value"].alias("value")))
    return col.cast(HEADER_TYPE)


def as_source(df: DataFrame, topic: str) -> DataFrame:
    """The table's rows with the columns of source.read(), tags/keys/properties derived from the key
    and headers exactly as source.decode() derives them, so a pipeline gives the same result either
    way (the table's own `properties` column holds only user properties; see raw())."""
    types = {f.name: f.dataType for f in df.schema.fields}
    return decode(df.select(
        F.col("key").cast("binary").alias("key"), F.col("value").cast("binary").alias("value"),
        F.lit(topic).alias("topic"), F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"), F.col("timestamp").cast("timestamp").alias("timestamp"),
        F.lit(0).alias("timestampType"), _headers(F.col("headers"), types["headers"]).alias("headers")))


def raw(spark: SparkSession, topic: str, *, stream: bool = False, catalog: str = CATALOG,
        options: dict[str, str] | None = None) -> DataFrame:
    """The table as the gateway wrote it (docs/tables.md: tags, keys, user properties, protocol, ...)."""
    reader = spark.readStream if stream else spark.read
    return reader.format("iceberg").options(**(options or {})).load(table_name(topic, catalog))


def read(spark: SparkSession, topic: str, *, stream: bool = False, catalog: str = CATALOG,
         options: dict[str, str] | None = None) -> DataFrame:
    """A batch (default) or streaming DataFrame over `topic`'s table, as source.read() shapes it.
    `options` are Iceberg read options, e.g. start-snapshot-id/end-snapshot-id for an incremental
    batch read or stream-from-timestamp for a stream."""
    return as_source(raw(spark, topic, stream=stream, catalog=catalog, options=options), topic)


def snapshots(spark: SparkSession, topic: str, catalog: str = CATALOG) -> list:
    """The table's snapshots, oldest first (snapshot_id, parent_id, committed_at, operation, summary)."""
    return (spark.read.table(f"{table_name(topic, catalog)}.snapshots")
            .orderBy("committed_at").collect())
