"""Kafka clients on a gateway whose sealed files go to a real S3 server (SeaweedFS): configs as
Kafka validates them, Fetch from offset 0 after the local files are gone, ListOffsets EARLIEST /
EARLIEST_LOCAL / by time, and a gateway that lost its disk serving every tiered record again."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from tests.tier.tier_gateway import TIERED, bucket_keys, list_offset, local_files, tier_gateway, wait_for, \
    wait_local_deleted

N = 1500


def create(gw, topic: str, configs: dict, partitions: int = 1):
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(30)


def produce(gw, topic: str, n: int = N) -> list[bytes]:
    values = [b"%06d:" % i + b"x" * 1000 for i in range(n)]
    p = Producer({"bootstrap.servers": gw.kafka_bootstrap, "linger.ms": 5, "batch.size": 16384})  # files of 256k
    for i, v in enumerate(values):
        p.produce(topic, v, key=b"k%d" % i)
        if i % 200 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    return values


def consume(gw, topic: str, start: int, end: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "g-tier", "enable.auto.commit": False,
                  "fetch.max.bytes": 1 << 20})
    c.assign([TopicPartition(topic, 0, start)])
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < end - start and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


def test_configs_validated_as_kafka_does(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    bad = {"local.retention.ms": "100000", "retention.ms": "1000", "remote.storage.enable": "true"}
    with pytest.raises(KafkaException, match="Value must not be more than retention.ms property value: 1000"):
        admin.create_topics([NewTopic("bad", 1, 1, config=bad)])["bad"].result(30)
    with pytest.raises(KafkaException, match="Remote log storage only supports topics with cleanup.policy=delete"):
        admin.create_topics([NewTopic("bad2", 1, 1, config={"remote.storage.enable": "true",
                                                             "cleanup.policy": "compact"})])["bad2"].result(30)
    copy_off = {"remote.storage.enable": "true", "remote.log.copy.disable": "true", "local.retention.ms": "1000"}
    with pytest.raises(KafkaException, match="the `local.retention.ms` and `retention.ms` must be set to the identical"):
        admin.create_topics([NewTopic("bad3", 1, 1, config=copy_off)])["bad3"].result(30)
    create(gw, "ok", TIERED)
    described = admin.describe_configs([ConfigResource("topic", "ok")])
    configs = next(iter(described.values())).result(30)
    assert configs["remote.storage.enable"].value == "true" and configs["local.retention.ms"].value == "1000"
    with pytest.raises(KafkaException, match="invalid to disable remote storage without deleting remote data"):
        admin.incremental_alter_configs([ConfigResource("topic", "ok", incremental_configs=[
            ConfigEntry("remote.storage.enable", "false", incremental_operation=AlterConfigOpType.SET)])])[
            ConfigResource("topic", "ok")].result(30)


def test_fetch_from_zero_and_offsets_below_the_local_start(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "tiered", TIERED)
    t0 = int(time.time() * 1000)
    values = produce(gw, "tiered")
    wait_local_deleted(gw)
    assert any(k.startswith("tier/manifests/") for k in bucket_keys(seaweed_s3, s3_bucket))
    local = list_offset(gw, "tiered", 0, -4)
    assert 0 < local < N
    assert list_offset(gw, "tiered", 0, -2) == 0
    assert list_offset(gw, "tiered", 0, -1) == N
    assert 0 < list_offset(gw, "tiered", 0, -5) + 1 <= local
    assert list_offset(gw, "tiered", 0, t0 - 1000) == 0  # by time: found in the tier
    assert consume(gw, "tiered", 0, N) == values
    assert consume(gw, "tiered", local - 3, N) == values[local - 3:]  # across the tier's end


def test_disk_loss_serves_every_tiered_record(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "lost", TIERED)
    values = produce(gw, "lost")
    wait_local_deleted(gw)
    tiered_end = wait_for(lambda: list_offset(gw, "lost", 0, -5) + 1, what="a committed upload")
    committer = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "g-lost"})
    try:
        committer.commit(offsets=[TopicPartition("lost", 0, 123)], asynchronous=False)
    finally:
        committer.close()
    client = seaweed_s3.client()
    wait_for(lambda: b"g-lost" in client.get_object(Bucket=s3_bucket, Key="tier/meta/consumerOffset.json")["Body"].read(),
             what="the committed offset copied to the tier")
    gw.kill9()
    began = time.monotonic()
    fresh = tier_gateway(gateway_factory, seaweed_s3, s3_bucket, name="empty")
    assert local_files(fresh) == []
    first = consume(fresh, "lost", 0, 1)
    print(f"disk loss: serving again after {time.monotonic() - began:.2f} s "
          f"({tiered_end} of {N} records tiered)")
    assert first == values[:1]
    end = list_offset(fresh, "lost", 0, -1)
    assert tiered_end <= end < N
    assert consume(fresh, "lost", 0, end) == values[:end]
    admin = AdminClient({"bootstrap.servers": fresh.kafka_bootstrap})
    configs = next(iter(admin.describe_configs([ConfigResource("topic", "lost")]).values())).result(30)
    assert configs["remote.storage.enable"].value == "true"
    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-lost")])["g-lost"].result(30)
    assert [(tp.topic, tp.partition, tp.offset) for tp in fetched.topic_partitions] == [("lost", 0, 123)]
    produce(fresh, "lost", 5)  # new records continue after the tiered ones
    assert list_offset(fresh, "lost", 0, -1) == end + 5
