"""Deleting a diskless topic and adding partitions to one (docs/diskless.md, "Deleting and adding
partitions"), on real gateways sharing a real S3 server (SeaweedFS), through kafka-python's admin:
the janitor deletes the deleted topic's index entries and then its objects, a topic created again
under the same name starts empty, and a second gateway follows the deletion, the new topic and its
new partitions from the bucket."""
from __future__ import annotations

from client import Admin
from kafka import KafkaConsumer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions

from acked_records import produce_acked, read_topic
from objstore_fixtures import object_store_on
from store.diskless import layout, topic_records
from store.diskless.index import DisklessIndex
from store.diskless.janitor import Janitor
from test_diskless_janitor import BUSY_JANITOR, _keys
from test_diskless_kafka import FAST_WAL, create_topic
from waiting import until


def _topics(bootstrap: str) -> set:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return set(consumer.topics())
    finally:
        consumer.close()


def _partitions(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return len(consumer.partitions_for_topic(topic) or ())
    finally:
        consumer.close()


def test_delete_recreate_and_grow_a_diskless_topic(seaweed_s3, s3_bucket, gateway_factory):
    a = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + BUSY_JANITOR, name="a")
    b = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL, name="b")
    create_topic(a.kafka_bootstrap, "gone", partitions=2)
    old = produce_acked(a.kafka_bootstrap, "gone", 50, prefix=b"old")
    assert until(lambda: "gone" in _topics(b.kafka_bootstrap), 15, 0.3)
    assert sorted(read_topic(b.kafka_bootstrap, "gone")) == sorted(old)

    admin = KafkaAdminClient(bootstrap_servers=a.kafka_bootstrap)
    try:
        admin.delete_topics(["gone"])
    finally:
        admin.close()
    assert "gone" not in _topics(a.kafka_bootstrap)
    assert until(lambda: "gone" not in _topics(b.kafka_bootstrap), 15, 0.3)  # b followed the bucket
    # the janitor deletes the old incarnation's entries, then its WAL objects and the tombstone
    assert until(lambda: not _keys(seaweed_s3, s3_bucket, "index") and not _keys(seaweed_s3, s3_bucket, "wal")
                 and not _keys(seaweed_s3, s3_bucket, "deleted"), 20, 0.3)

    create_topic(a.kafka_bootstrap, "gone", partitions=1)  # the same name again: empty
    new = produce_acked(a.kafka_bootstrap, "gone", 5, prefix=b"new")
    assert sorted(read_topic(a.kafka_bootstrap, "gone")) == sorted(new)
    assert until(lambda: "gone" in _topics(b.kafka_bootstrap), 15, 0.3)
    assert sorted(read_topic(b.kafka_bootstrap, "gone")) == sorted(new)

    admin = KafkaAdminClient(bootstrap_servers=b.kafka_bootstrap)  # grown through the other gateway
    try:
        admin.create_partitions({"gone": NewPartitions(3)})
    finally:
        admin.close()
    assert _partitions(b.kafka_bootstrap, "gone") == 3
    assert until(lambda: _partitions(a.kafka_bootstrap, "gone") == 3, 15, 0.3)
    more = produce_acked(a.kafka_bootstrap, "gone", 30, prefix=b"more")  # spread over the 3 partitions
    assert sorted(read_topic(b.kafka_bootstrap, "gone")) == sorted(new + more)


def test_a_topic_created_again_never_sees_the_old_incarnation(seaweed_s3, s3_bucket):
    """Created again before the janitor ran, with a late writer (a gateway that has not heard of the
    deletion) still committing to the old topic: the new one starts empty and stays so, and the
    janitor's pass deletes every entry of the old one."""
    stores = [object_store_on(seaweed_s3, s3_bucket, prefix="p/") for _ in range(2)]
    try:
        here, late = DisklessIndex(stores[0]), DisklessIndex(stores[1])
        here.publish_topic("t", 1)
        here.commit("t", 0, "wal-a", 0, b"x" * 10, 5)
        assert late.refresh("t", 0) == 5
        topic_records.delete_topic(here, "t")
        here.publish_topic("t", 1)
        late.commit("t", 0, "wal-b", 0, b"y" * 10, 3)  # still the old incarnation's slot 1
        assert here.refresh("t", 0) == 0
        assert here.commit("t", 0, "wal-c", 0, b"z" * 10, 2).base == 0
        assert DisklessIndex(stores[0]).refresh("t", 0) == 2  # a gateway new to the bucket too
        Janitor(here, grace_s=0).run_once({}, 0, compact=False)
        keys = [i.key for i in stores[0].list(layout.INDEX)]
        assert len(keys) == 1 and "/t@" in keys[0], keys  # the new topic's one entry is all that is left
    finally:
        for s in stores:
            s.close()


def test_a_remoting_delete_removes_the_diskless_topic_from_the_bucket(seaweed_s3, s3_bucket, gateway_factory):
    """mqadmin's deleteTopic (DELETE_TOPIC_IN_BROKER) deletes a diskless topic from the bucket too: a
    restart of the gateway does not bring it back from there, and a second gateway follows."""
    args = seaweed_s3.tier_args(s3_bucket) + FAST_WAL
    a = gateway_factory(extra_args=args, name="a")
    b = gateway_factory(extra_args=args, name="b")
    with Admin(a.namesrv) as admin:
        admin.create_topic("rgone", queues=1, attributes={"diskless.enable": "true"})
        assert until(lambda: "rgone" in _topics(b.kafka_bootstrap), 15, 0.3)
        configs_admin = KafkaAdminClient(bootstrap_servers=a.kafka_bootstrap)
        try:  # a retention version in the bucket, which the deletion must take too
            configs_admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "rgone", {"retention.ms": "60000"})])
        finally:
            configs_admin.close()
        assert until(lambda: _keys(seaweed_s3, s3_bucket, "configs"), 15, 0.3)
        admin.delete_topic("rgone")
    assert "rgone" not in _topics(a.kafka_bootstrap)
    assert until(lambda: "rgone" not in _topics(b.kafka_bootstrap), 15, 0.3)
    assert not _keys(seaweed_s3, s3_bucket, "configs")
    a.stop()
    a.start()
    assert "rgone" not in _topics(a.kafka_bootstrap)
