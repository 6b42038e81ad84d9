"""Consumer groups on diskless topics (docs/diskless.md, "Where each semantic's state lives"): a
group's committed offsets of diskless partitions are written to the bucket with each commit, so a
gateway whose data dir was wiped (or a new one on the bucket) resumes the group where it was."""
from __future__ import annotations

import shutil

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from acked_records import produce_acked
from test_diskless_kafka import FAST_WAL, create_topic


def _commit(bootstrap: str, group: str, offsets: dict) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({tp: OffsetAndMetadata(o, "m", -1) for tp, o in offsets.items()})
    finally:
        consumer.close()


def _committed(bootstrap: str, group: str, tps: list) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return [consumer.committed(tp) for tp in tps]
    finally:
        consumer.close()


def test_group_offsets_survive_a_wiped_data_dir(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    create_topic(g.kafka_bootstrap, "grp", partitions=2)
    create_topic(g.kafka_bootstrap, "local", partitions=1, diskless=False)
    produce_acked(g.kafka_bootstrap, "grp", 40)
    tps = [TopicPartition("grp", 0), TopicPartition("grp", 1)]
    _commit(g.kafka_bootstrap, "group/one", {tps[0]: 7, tps[1]: 3, TopicPartition("local", 0): 0})
    assert _committed(g.kafka_bootstrap, "group/one", tps) == [7, 3]
    g.kill9()
    shutil.rmtree(g.data_dir)
    g.start()
    assert _committed(g.kafka_bootstrap, "group/one", tps) == [7, 3]
    # a later commit wins over the bucket's copy after another restart
    _commit(g.kafka_bootstrap, "group/one", {tps[0]: 9})
    g.kill9()
    shutil.rmtree(g.data_dir)
    g.start()
    assert _committed(g.kafka_bootstrap, "group/one", tps) == [9, 3]
