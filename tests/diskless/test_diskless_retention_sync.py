"""A retention change of a diskless topic made through one gateway reaches the other gateways of the
bucket (docs/diskless.md, "Retention changes"): `retention.bytes` set by AlterConfigs on gateway A
(whose janitor is idle) is listed by DescribeConfigs on gateway B and applied by B's janitor, which
moves the topic's log start for everyone. Before, B kept its own (unlimited) retention."""
from __future__ import annotations

import os
import sys

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from acked_records import produce_acked, read_topic
from test_diskless_janitor import BUSY_JANITOR, IDLE_JANITOR
from test_diskless_kafka import create_topic

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from clusters import wait_for  # noqa: E402


def described(bootstrap: str, topic: str) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        resp = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        admin.close()
    return {name: c["value"] for name, c in resp["topic"][topic].items()}


def test_a_retention_change_on_one_gateway_reaches_the_others(seaweed_s3, s3_bucket, gateway_factory):
    a = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + IDLE_JANITOR, name="a")
    b = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + BUSY_JANITOR, name="b")
    create_topic(a.kafka_bootstrap, "rsync", partitions=1)
    acked = []
    for n in range(10):  # ten entries of ~1 400 bytes each
        acked += produce_acked(a.kafka_bootstrap, "rsync", 10, prefix=b"r%d" % n, value_bytes=100)
    wait_for(lambda: "rsync" in described_topics(b.kafka_bootstrap), 20, "gateway b to adopt the topic")
    admin = KafkaAdminClient(bootstrap_servers=a.kafka_bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "rsync", configs={"retention.bytes": "2000"})])
    finally:
        admin.close()
    wait_for(lambda: described(b.kafka_bootstrap, "rsync").get("retention.bytes") == "2000", 20,
             "the change to reach gateway b")
    consumer = KafkaConsumer(bootstrap_servers=b.kafka_bootstrap)
    tp = TopicPartition("rsync", 0)
    try:
        start = wait_for(lambda: consumer.beginning_offsets([tp])[tp], 30, "gateway b's janitor to apply it")
    finally:
        consumer.close()
    assert 0 < start < 100
    assert described(b.kafka_bootstrap, "rsync").get("diskless.enable") == "true"
    assert read_topic(a.kafka_bootstrap, "rsync")[-10:] == acked[-10:]  # the newest entry stays


def described_topics(bootstrap: str) -> list[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return admin.list_topics()
    finally:
        admin.close()
