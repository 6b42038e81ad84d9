"""Spark's stock Kafka connector reads a whole tiered topic (most of it only in the real S3 server),
then the same from a gateway that lost its disk."""
from __future__ import annotations

from tests.tier.test_tier_kafka import N, create, produce
from tests.tier.tier_gateway import TIERED, list_offset, tier_gateway, wait_local_deleted


def values_read(spark, bootstrap: str, topic: str) -> list[bytes]:
    from spark import source
    return [bytes(r["value"]) for r in source.read(spark, bootstrap, topic).orderBy("offset").collect()]


def test_spark_batch_read_of_a_tiered_topic_and_after_disk_loss(gateway_factory, seaweed_s3, s3_bucket):
    from spark import session
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "sparked", TIERED)
    values = produce(gw, "sparked")
    wait_local_deleted(gw)
    assert list_offset(gw, "sparked", 0, -4) > 0
    spark = session.build("rocketgate-tier-tests")
    try:
        assert values_read(spark, gw.kafka_bootstrap, "sparked") == values
        gw.kill9()
        fresh = tier_gateway(gateway_factory, seaweed_s3, s3_bucket, name="empty")
        end = list_offset(fresh, "sparked", 0, -1)
        assert 0 < end < N
        assert values_read(spark, fresh.kafka_bootstrap, "sparked") == values[:end]
    finally:
        spark.stop()
