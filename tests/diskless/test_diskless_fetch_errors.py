"""A diskless Fetch that fails on the object store is answered KAFKA_STORAGE_ERROR (retriable) and
now also logged, at most once per 30 s however often consumers retry: before, a consumer read
nothing while the gateway's log said nothing (issue 28: an acknowledged batch's WAL object deleted
by a janitor pass). Real gateway on SeaweedFS, its WAL objects deleted behind its back, no cache,
confluent-kafka consumer."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from acked_records import produce_acked
from test_diskless_kafka import FAST_WAL, create_topic

LINE = "diskless fetch of dl-fail-0 at offset 0 failed (object store"


def test_a_failed_diskless_fetch_is_logged_once_per_interval(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL + ["--diskless-cache-bytes", "1"])
    create_topic(g.kafka_bootstrap, "dl-fail", partitions=1)
    produce_acked(g.kafka_bootstrap, "dl-fail", 5)
    client = seaweed_s3.client()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=s3_bucket):
        for o in page.get("Contents", []):
            if "/diskless/wal/" in "/" + o["Key"]:
                client.delete_object(Bucket=s3_bucket, Key=o["Key"])
    consumer = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": "dl-fail-g",
                         "enable.auto.commit": False, "fetch.error.backoff.ms": 100})
    fetches = 0
    try:
        consumer.assign([TopicPartition("dl-fail", 0, 0)])  # from offset 0: no ListOffsets first
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (LINE not in g.log() or fetches < 10):
            msg = consumer.poll(0.2)
            assert msg is None or msg.error() is not None  # nothing can be read
            fetches += 1
    finally:
        consumer.close()
    assert g.log().count(LINE) == 1, g.log()[-3000:]  # the retries that failed too are not logged again
