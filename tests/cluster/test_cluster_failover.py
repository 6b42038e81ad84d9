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


def _partition(admin, topic: str = TOPIC):
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[0]


def replicated_partition(gws, topic: str):
    """Creates `topic`: one partition replicated on every gateway; its partition once it has a
    leader and all replicas in sync."""
    admin = AdminClient({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws.values())})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=len(gws))])[topic].result(10)
    return wait_for(lambda: (p := _partition(admin, topic)).leader in gws and len(p.isrs) == len(gws) and p, 20,
                    what="a leader")


def elected_after(gws, old: int, topic: str):
    """(an admin client of the other gateways, the partition once one of them leads it)."""
    rest = AdminClient({"bootstrap.servers": ",".join(g.kafka_bootstrap for n, g in gws.items() if n != old)})
    return rest, wait_for(lambda: (p := _partition(rest, topic)).leader not in (-1, old) and p, 30,
                          what="a new leader")


class AckedProducer:
    """An idempotent acks=all librdkafka producer of partition 0 and what it was told."""

    def __init__(self, gws, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws.values()),
                                  "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                                  "message.timeout.ms": 60000})
        self.sent, self.acked, self.failed = 0, [], []

    def _delivered(self, err, msg) -> None:
        (self.failed if err else self.acked).append(msg.value())

    def produce(self, count: int) -> None:
        for _ in range(count):
            self.producer.produce(self.topic, b"v%06d" % self.sent, partition=0, on_delivery=self._delivered)
            self.sent += 1
            self.producer.poll(0)
            time.sleep(0.002)

    def flush_all_acknowledged(self) -> list[bytes]:
        """Waits for every answer; the acknowledged values, once none failed."""
        assert self.producer.flush(60) == 0
        assert not self.failed, f"{len(self.failed)} records failed"
        assert len(self.acked) == self.sent
        return self.acked


def test_killed_leader_is_replaced_and_no_acknowledged_record_is_lost_or_duplicated(three):
    gws = three
    first = replicated_partition(gws, TOPIC)
    load = AckedProducer(gws, TOPIC)
    load.produce(500)
    gws[first.leader].kill9()
    killed_at = time.monotonic()
    load.produce(500)
    admin, now = elected_after(gws, first.leader, TOPIC)
    print(f"new leader {now.leader} {time.monotonic() - killed_at:.1f} s after kill -9")
    load.produce(500)
    acked = load.flush_all_acknowledged()

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
