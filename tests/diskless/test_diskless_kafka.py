"""Diskless topics through real Kafka clients, real gateways and a real S3 server (SeaweedFS): the
records live only in WAL objects and the per-queue index in the bucket (docs/diskless.md)."""
from __future__ import annotations

import shutil

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import InvalidConfigurationError

from acked_records import produce_acked, read_topic

FAST_WAL = ["--diskless-wal-max-ms", "20"]


def create_topic(bootstrap: str, name: str, partitions: int = 3, diskless: bool = True) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        configs = {"diskless.enable": "true"} if diskless else {}
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
    finally:
        admin.close()


def wal_and_index_keys(seaweed_s3, bucket: str) -> list[str]:
    client = seaweed_s3.client()
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def test_produce_and_fetch_go_through_the_bucket_only(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    create_topic(g.kafka_bootstrap, "dl")
    acked = produce_acked(g.kafka_bootstrap, "dl", 300)
    assert sorted(read_topic(g.kafka_bootstrap, "dl")) == sorted(acked)
    keys = wal_and_index_keys(seaweed_s3, s3_bucket)
    assert any("/diskless/wal/" in k for k in keys) and any("/diskless/index/dl@" in k for k in keys)  # <topic>@<incarnation>
    assert any(k.endswith("/diskless/topics/dl") for k in keys)


def test_a_second_gateway_and_a_wiped_data_dir_serve_every_diskless_queue(seaweed_s3, s3_bucket, gateway_factory):
    args = seaweed_s3.tier_args(s3_bucket) + FAST_WAL
    a = gateway_factory(extra_args=args, name="a")
    create_topic(a.kafka_bootstrap, "shared")
    acked = produce_acked(a.kafka_bootstrap, "shared", 200)
    b = gateway_factory(extra_args=args, name="b")  # its own data dir, the same bucket
    assert sorted(read_topic(b.kafka_bootstrap, "shared")) == sorted(acked)
    more = produce_acked(b.kafka_bootstrap, "shared", 100, prefix=b"b")  # b appends after a's entries
    a.stop()
    shutil.rmtree(a.data_dir)
    a.start()
    assert sorted(read_topic(a.kafka_bootstrap, "shared")) == sorted(acked + more)


def test_diskless_enable_is_fixed_at_creation(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    create_topic(g.kafka_bootstrap, "plain", diskless=False)
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
    change = ConfigEntry("diskless.enable", "true", incremental_operation=AlterConfigOpType.SET)
    (future,) = admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, "plain",
                                                                incremental_configs=[change])]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=20)
    assert refused.value.args[0].name() == "INVALID_CONFIG"
    assert "when the topic is created" in refused.value.args[0].str()


def test_diskless_needs_an_object_store(gateway):
    with pytest.raises(InvalidConfigurationError):
        create_topic(gateway.kafka_bootstrap, "nostore")


def test_a_running_gateway_adopts_a_diskless_topic_created_through_another(seaweed_s3, s3_bucket, gateway_factory):
    import time
    args = seaweed_s3.tier_args(s3_bucket) + FAST_WAL
    a = gateway_factory(extra_args=args, name="a")
    b = gateway_factory(extra_args=args, name="b")
    create_topic(a.kafka_bootstrap, "later", partitions=2)  # after b started
    acked = produce_acked(a.kafka_bootstrap, "later", 50)
    admin = KafkaAdminClient(bootstrap_servers=b.kafka_bootstrap)  # lists topics without auto-creating one
    try:
        deadline = time.monotonic() + 30
        while "later" not in admin.list_topics() and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        admin.close()
    assert sorted(read_topic(b.kafka_bootstrap, "later")) == sorted(acked)
