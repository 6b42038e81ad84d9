"""Spark reads a table topic whose warehouse is in the object-storage tier (docs/tables.md,
"Warehouse"): the gateway runs with --tier-url on the real SeaweedFS S3 server and vends the
endpoint, path style, region and credentials with each table; Spark's Iceberg REST catalog opens the
s3:// files with S3FileIO (iceberg-aws-bundle, spark/pom.xml) and nothing else configured."""
from __future__ import annotations

import pytest
from spark_helpers import create_topic, produce, wait_until

from spark import tables

pytestmark = pytest.mark.timeout(600)


def test_spark_reads_a_table_in_the_bucket(spark, kafka_broker, tmp_path, seaweed_s3, s3_bucket):
    if kafka_broker is not None:
        pytest.skip("a gateway feature: Apache Kafka has no table topics")
    from gateway_process import GatewayProcess, free_port, wait_port
    http = free_port()
    gw = GatewayProcess(str(tmp_path / "data"), extra_args=[
        "--http-port", str(http), *seaweed_s3.tier_args(s3_bucket, prefix="gw/"), "--tables-vend-credentials"])
    try:
        gw.start()
        wait_port(http, proc=gw.proc)
        uri = f"http://127.0.0.1:{http}/iceberg"
        create_topic(gw.kafka_bootstrap, "s3clicks", partitions=2,
                     configs={"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "300"})
        produce(gw.kafka_bootstrap, "s3clicks", [
            {"key": None, "value": f"v{i}".encode(), "headers": [("TAGS", b"ab"[i % 2:i % 2 + 1])],
             "partition": i % 2, "timestamp_ms": None} for i in range(30)])
        for key, value in tables.catalog_conf(uri, name="rgs3").items():
            spark.conf.set(key, value)
        name = tables.table_name("s3clicks", catalog="rgs3")

        def counted():
            try:
                return spark.sql(f"SELECT tags, count(*) AS n FROM {name} GROUP BY tags ORDER BY tags").collect()
            except Exception:  # noqa: BLE001 - the table not created yet
                return None
        wait_until(lambda: (rows := counted()) and sum(r["n"] for r in rows) == 30, timeout_s=120, what="30 rows through Spark")
        rows = counted()
        assert [(r["tags"], r["n"]) for r in rows] == [("a", 15), ("b", 15)]
        files = spark.sql(f"SELECT file_path FROM {name}.files").collect()
        assert files and all(f["file_path"].startswith(f"s3://{s3_bucket}/gw/tables/warehouse/") for f in files)
    finally:
        gw.stop()
