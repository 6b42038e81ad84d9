"""Automatic failover with three real gateways and a real etcd: a partition with replication factor 3
is written by an idempotent acks=all librdkafka producer; its leader is killed (-9); the cluster
elects the first live in-sync replica (epoch + 1) once the leader's lease ends, librdkafka follows
Metadata to it, and every acknowledged record is read back exactly once. The killed gateway comes
back as a follower and catches up."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import NODES, require_etcd, start_cluster
from test_cluster_clients import wait_for

TOPIC = "failover"


@pytest.fixture
def three(tmp_path):
    """Three gateways on etcd whose replicas leave the in-sync set after 5 s behind."""
    require_etcd()
    cluster = start_cluster(tmp_path, NODES, ["--replica-lag-time-max-ms", "5000"])
    yield cluster.gateways
    cluster.stop()


def _partition(admin):
    return admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[0]


def test_killed_leader_is_replaced_and_no_acknowledged_record_is_lost_or_duplicated(three):
    gws = three
    bootstrap = ",".join(g.kafka_bootstrap for g in gws.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=3)])[TOPIC].result(10)
    first = wait_for(lambda: (p := _partition(admin)).leader in NODES and len(p.isrs) == 3 and p, 20, what="a leader")
    acked, failed = [], []

    def delivered(err, msg):
        (failed if err else acked).append(msg.value())

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 60000})
    sent = 0

    def produce(count):
        nonlocal sent
        for _ in range(count):
            producer.produce(TOPIC, b"v%06d" % sent, partition=0, on_delivery=delivered)
            sent += 1
            producer.poll(0)
            time.sleep(0.002)

    produce(500)
    gws[first.leader].kill9()
    killed_at = time.monotonic()
    produce(500)
    admin = AdminClient({"bootstrap.servers": ",".join(g.kafka_bootstrap for n, g in gws.items()
                                                       if n != first.leader)})
    now = wait_for(lambda: (p := _partition(admin)).leader not in (-1, first.leader) and p, 30, what="a new leader")
    print(f"new leader {now.leader} {time.monotonic() - killed_at:.1f} s after kill -9")
    produce(500)
    assert producer.flush(60) == 0
    assert not failed, f"{len(failed)} records failed"
    assert len(acked) == sent

    consumer = Consumer({"bootstrap.servers": gws[now.leader].kafka_bootstrap, "group.id": "fo-check",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < len(acked) and time.monotonic() < deadline:
        for m in consumer.consume(500, 1.0):
            if not m.error():
                got.append(m.value())
    consumer.close()
    assert sorted(got) == sorted(acked), (len(got), len(acked))
    assert len(set(got)) == len(got)

    gws[first.leader].start()  # back as a follower of the new leader: catches up, rejoins the ISR
    back = wait_for(lambda: (p := _partition(admin)) and len(p.isrs) == 3 and p, 60, what="the old leader back in sync")
    assert back.leader == now.leader
