"""Spark's stock Kafka connector (spark-sql-kafka) reads and writes a diskless topic (docs/diskless.md):
its records come from the WAL objects and index in the bucket (SeaweedFS), through ListOffsets and
Fetch of a gateway whose own data dir holds none of them; a batch read equals what was produced, and
what Spark's Kafka sink wrote through one gateway is read back through another."""
from __future__ import annotations

import pytest
from spark_helpers import create_topic, produce

from spark import source

pytestmark = pytest.mark.timeout(600)


def test_spark_batch_read_of_a_diskless_topic(spark, seaweed_s3, s3_bucket, gateway_factory):
    writer = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + ["--diskless-wal-max-ms", "20"],
                             name="writer")
    create_topic(writer.kafka_bootstrap, "spark-dl", partitions=2, configs={"diskless.enable": "true"})
    produced = produce(writer.kafka_bootstrap, "spark-dl",
                       [{"value": b"v%d" % i, "key": b"k%d" % i, "partition": i % 2} for i in range(40)])
    # another gateway on the same bucket, with its own empty data dir, serves Spark
    reader = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket), name="reader")
    rows = source.read(spark, reader.kafka_bootstrap, "spark-dl").select("partition", "offset", "key", "value").collect()
    got = sorted((r["partition"], r["offset"], bytes(r["key"]), bytes(r["value"])) for r in rows)
    want = sorted((p["partition"], p["offset"], p["key"], p["value"]) for p in produced)
    assert got == want and len(got) == 40


def test_spark_batch_write_to_a_diskless_topic(spark, seaweed_s3, s3_bucket, gateway_factory):
    """Spark's Kafka sink (its idempotent producer) writes a diskless topic through one gateway;
    another gateway on the bucket, with its own empty data dir, reads every row back."""
    writer = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + ["--diskless-wal-max-ms", "20"],
                             name="writer")
    create_topic(writer.kafka_bootstrap, "spark-dlw", partitions=2, configs={"diskless.enable": "true"})
    rows = [(b"k%d" % i, b"v%d" % i) for i in range(30)]
    (spark.createDataFrame(rows, "key binary, value binary").write.format("kafka")
     .option("kafka.bootstrap.servers", writer.kafka_bootstrap).option("topic", "spark-dlw").save())
    reader = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket), name="reader")
    got = source.read(spark, reader.kafka_bootstrap, "spark-dlw").select("key", "value").collect()
    assert sorted((bytes(r["key"]), bytes(r["value"])) for r in got) == sorted(rows)
