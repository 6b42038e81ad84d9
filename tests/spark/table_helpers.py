"""Table topics for the Spark table tests: the gateway's own (REST catalog) or a mirror.

Against the gateway a table topic is a topic with iceberg.mode=key_value; its table is read through
the gateway's Iceberg REST catalog once the writer has committed every produced offset. Against Apache
Kafka (SPARK_TEST_BROKER=kafka, how the tests themselves are checked) there is no table writer, so
`MirroredTable` writes the same columns with Spark into a Hadoop catalog in a temp dir, snapshot by
snapshot, with the same `rocketgate.next-offsets` summary: the pipelines' table variants then run
against Kafka unchanged.
"""
from __future__ import annotations

import json

from pyspark.sql import functions as F
from spark_helpers import wait_until

from spark import source, tables
from spark.pipelines import common

NEXT_OFFSETS = "rocketgate.next-offsets"  # the snapshot summary entry: {partition: next offset}
COLUMNS = ("key binary, headers map<string,binary>, timestamp timestamp, partition int, offset bigint, "
           "tags string, keys array<string>, properties map<string,string>, protocol string, "
           "msg_id string, value binary")


def next_offsets(snapshot) -> dict[int, int]:
    return {int(p): int(o) for p, o in json.loads(snapshot["summary"][NEXT_OFFSETS]).items()}


def kafka_end_offsets(spark, bootstrap: str, topic: str) -> dict[int, int]:
    rows = source.read(spark, bootstrap, topic).groupBy("partition").agg(F.max("offset").alias("last"))
    return {r["partition"]: r["last"] + 1 for r in rows.collect()}


class Table:
    """A topic's table as the pipelines see it: `catalog` is their --catalog argument."""

    def __init__(self, spark, bootstrap: str, topic: str, catalog: str) -> None:
        self.spark, self.bootstrap, self.topic, self.catalog = spark, bootstrap, topic, catalog
        self.catalog_name = common.catalog_name(catalog)
        for key, value in common.catalog_conf(catalog).items():
            spark.conf.set(key, value)

    def read(self, **kw):
        return tables.read(self.spark, self.topic, catalog=self.catalog_name, **kw)

    def snapshots(self) -> list:
        return tables.snapshots(self.spark, self.topic, self.catalog_name)


class GatewayTable(Table):
    """The gateway's table of a key_value table topic, through its REST catalog."""

    def sync(self) -> None:
        """Until the table's newest snapshot covers every offset the log has."""
        want = kafka_end_offsets(self.spark, self.bootstrap, self.topic)

        def caught_up():
            snaps = self.snapshots() if self._exists() else []
            return bool(snaps) and all(next_offsets(snaps[-1]).get(p, 0) >= o for p, o in want.items())
        wait_until(caught_up, what=f"the table of {self.topic} to reach {want}")

    def _exists(self) -> bool:
        return self.spark.catalog.tableExists(tables.table_name(self.topic, self.catalog_name))


class MirroredTable(Table):
    """A Spark-written copy of the topic (Kafka connector -> Iceberg) in a Hadoop catalog."""

    def __init__(self, spark, bootstrap: str, topic: str, warehouse: str) -> None:
        super().__init__(spark, bootstrap, topic, warehouse)
        self.ident = tables.table_name(topic, self.catalog_name)
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{self.catalog_name}`.`{tables.NAMESPACE}`")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {self.ident} ({COLUMNS}) USING iceberg")

    def sync(self) -> None:
        """Append what the log gained since the last snapshot, as one snapshot."""
        snaps = self.snapshots()
        done = next_offsets(snaps[-1]) if snaps else {}
        df = source.read(self.spark, self.bootstrap, self.topic)
        for p, o in done.items():
            df = df.where((F.col("partition") != p) | (F.col("offset") >= o))
        rows = df.select("key", F.map_from_entries("headers").alias("headers"), "timestamp", "partition",
                         "offset", "tags", "keys", "properties", F.lit("kafka").alias("protocol"),
                         F.lit(None).cast("string").alias("msg_id"), "value").cache()
        ends = {r["partition"]: r["last"] + 1 for r in
                rows.groupBy("partition").agg(F.max("offset").alias("last")).collect()}
        covered = {str(p): o for p, o in {**done, **ends}.items()}
        rows.writeTo(self.ident).option(f"snapshot-property.{NEXT_OFFSETS}", json.dumps(covered)).append()
        rows.unpersist()
