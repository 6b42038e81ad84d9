"""Table topics with the warehouse in the object-storage tier: a gateway with --tier-url on the real
SeaweedFS S3 server writes the tables' data, manifest and metadata files into the bucket, and pyiceberg's
RestCatalog and DuckDB read them with only what /iceberg tells them (endpoint, path-style, credentials
when vended) or with credentials of their own."""
from __future__ import annotations

import configparser
import json
import time
import urllib.request

from confluent_kafka import Producer as KafkaProducer

from conftest import create_table_topic, duckdb_connection, rest_catalog, wait_rows
from objstore_fixtures import object_store_on


def _produce(gw, topic: str, count: int) -> None:
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap})
    for i in range(count):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2,
                  headers=[("TAGS", b"even" if i % 2 == 0 else b"odd")])
    assert p.flush(20) == 0


def _keys(server) -> dict[str, str]:
    cfg = configparser.ConfigParser()
    cfg.read(server.credentials_file)
    return {"s3.access-key-id": cfg["default"]["aws_access_key_id"],
            "s3.secret-access-key": cfg["default"]["aws_secret_access_key"]}


def test_warehouse_in_bucket_read_with_vended_access(table_gateway, seaweed_s3, s3_bucket):
    gw = table_gateway([*seaweed_s3.tier_args(s3_bucket, prefix="gw/"), "--tables-vend-credentials"])
    create_table_topic(gw, "clicks", partitions=2)
    _produce(gw, "clicks", 20)
    rows = wait_rows(gw, "clicks", 20)  # RestCatalog given only the catalog URI
    assert sorted(r["value"] for r in rows) == sorted(f"v{i}".encode() for i in range(20))

    warehouse = f"s3://{s3_bucket}/gw/tables/warehouse/"
    table = rest_catalog(gw).load_table(("rocketgate", "clicks"))
    assert table.metadata_location.startswith(warehouse)
    data_files = [task.file.file_path for task in table.scan().plan_files()]
    assert data_files and all(p.startswith(warehouse) for p in data_files)
    bucket = object_store_on(seaweed_s3, s3_bucket, prefix="gw/")
    try:
        stored = {f"s3://{s3_bucket}/gw/{o.key}" for o in bucket.list("tables/warehouse/")}
    finally:
        bucket.close()
    assert set(data_files) <= stored and table.metadata_location in stored

    con = duckdb_connection(gw)  # DuckDB: the endpoint, path style and keys come from /iceberg
    got = con.execute('SELECT tags, count(*) FROM rg.rocketgate.clicks GROUP BY tags ORDER BY tags').fetchall()
    assert got == [("even", 10), ("odd", 10)]


def test_readers_bring_their_own_credentials(table_gateway, seaweed_s3, s3_bucket):
    gw = table_gateway(seaweed_s3.tier_args(s3_bucket, prefix="gw/"))  # nothing secret vended
    create_table_topic(gw, "views", partitions=2)
    _produce(gw, "views", 6)
    from pyiceberg.catalog.rest import RestCatalog
    deadline = time.monotonic() + 60
    rows: list = []
    while len(rows) < 6 and time.monotonic() < deadline:
        catalog = RestCatalog("rocketgate", uri=gw.catalog_uri, **_keys(seaweed_s3))
        try:
            rows = catalog.load_table(("rocketgate", "views")).scan().to_arrow().to_pylist()
        except Exception:  # noqa: BLE001 - not created yet
            time.sleep(0.3)
    assert sorted(r["key"] for r in rows) == sorted(f"k{i}".encode() for i in range(6))
    with urllib.request.urlopen(f"{gw.catalog_uri}/v1/namespaces/rocketgate/tables/views") as answer:
        vended = json.load(answer)["config"]
    assert vended["s3.endpoint"] == seaweed_s3.endpoint and vended["s3.path-style-access"] == "true"
    assert not any("secret" in k or "access-key" in k for k in vended)  # only with --tables-vend-credentials
