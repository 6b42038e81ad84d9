"""A one-process gateway's data dir joining a cluster (`--cluster`, real etcd and gateway): the
topics it already had are published to etcd led by this gateway and keep every record, and a
group's committed offsets are published with them (another member reads them). Before, the view's
second load at start, ahead of the publication, dropped those topics and the store deleted them."""
from __future__ import annotations

import os

from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from acked_records import read_topic
from clusters import require_etcd, start_cluster, start_etcd
from gateway_process import GatewayProcess, stop_all

TOPIC, PARTITIONS = "made-before-joining", 2


def test_topics_and_offsets_made_before_joining_are_kept(tmp_path):
    require_etcd()
    values = [b"v%02d" % i for i in range(40)]
    single = GatewayProcess(str(tmp_path / "node1"))
    try:
        single.start()
        admin = AdminClient({"bootstrap.servers": single.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": single.kafka_bootstrap, "acks": "all"})
        for i, v in enumerate(values):
            producer.produce(TOPIC, v, partition=i % PARTITIONS)
        assert producer.flush(30) == 0
        committer = KafkaConsumer(bootstrap_servers=single.kafka_bootstrap, group_id="before-g",
                                  enable_auto_commit=False)
        committer.commit({TopicPartition(TOPIC, p): _meta(7) for p in range(PARTITIONS)})
        committer.close()
    finally:
        assert single.stop() == 0
    etcd = start_etcd(tmp_path)
    cluster = None
    try:
        cluster = start_cluster(tmp_path, nodes=(1, 2), etcd=etcd)
        assert os.path.isdir(tmp_path / "node1" / "consumequeue" / TOPIC)
        assert sorted(read_topic(cluster.gateways[2].kafka_bootstrap, TOPIC)) == values
        check = KafkaConsumer(bootstrap_servers=cluster.gateways[2].kafka_bootstrap, group_id="before-g",
                              enable_auto_commit=False)
        try:
            assert {p: check.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)} == {0: 7, 1: 7}
        finally:
            check.close()
    finally:
        if cluster is not None:
            cluster.stop()
        else:
            stop_all([etcd])


def _meta(offset: int):
    from kafka.structs import OffsetAndMetadata
    try:
        return OffsetAndMetadata(offset, "", -1)
    except TypeError:  # kafka-python before 2.1
        return OffsetAndMetadata(offset, "")
