"""gRPC queue ids that keep their meaning when partition leaders move (issue 26): three gateways
with --grpc-port, a 6-partition topic with three replicas, and the leader of partition 0 stopped.

- A pull consumer keyed by (broker name, queue id) of the route, with its own offsets (as a
  RocketMQ 5 PullConsumer keeps them), reads every stored message exactly once, each key's
  messages from one partition in order. Partition p holds 3 * (p + 1) messages before the move, so
  a key that named another partition before would read from the wrong offset. Before, a route
  numbered each gateway's queues by rank (broker-<n>, 0..k-1), and after the move keys named other
  partitions: the consumer read a partition's messages under a key that had another's offset.
- The stock Python SDK's FIFO producer (rocketmq-python-client 5.1: it picks a queue of the route
  by SHA-256 of the group and names no queue id) keeps each message group on one partition across
  the move. Before, a send went to the first queue the receiving gateway led, which a move changed.
"""
from __future__ import annotations

import os
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import require_etcd, start_cluster, wait_for
from grpc_queue_clients import (PullConsumer, check_one_partition_per_key, consume_until, groups_partitions,
                                partitions_of, produce, query_route, send_groups)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grpc"))
from grpc_sdk import GrpcGateway, config, message  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import Producer  # noqa: E402

pytestmark = pytest.mark.timeout(300)
QUEUES = 6


@pytest.fixture
def cluster(tmp_path):
    require_etcd()
    c = start_cluster(tmp_path / "cluster", gateway=GrpcGateway)
    yield c
    c.stop()


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return {p: m.leader for p, m in md.topics[topic].partitions.items()}


def create(cluster, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=QUEUES, replication_factor=3)])[topic].result(10)
    gws = cluster.gateways
    return wait_for(lambda: (ls := leaders(cluster.bootstrap, topic)) and len(set(ls.values())) == len(gws)
                    and all(n in gws for n in ls.values()) and ls, 30, "every gateway leading")


def stop_leader_of_0(cluster, topic: str, before: dict[int, int]) -> list:
    """Stop partition 0's leader; the other gateways once each partition has a new live leader."""
    moved = before[0]
    cluster.gateways[moved].stop()
    rest = [g for n, g in cluster.gateways.items() if n != moved]
    bootstrap = ",".join(g.kafka_bootstrap for g in rest)
    wait_for(lambda: all(n not in (-1, moved) for n in leaders(bootstrap, topic).values()), 30, "new leaders")
    # every surviving gateway's route names the new leaders (their views are watched from etcd)
    wait_for(lambda: all(len({q.broker.endpoints.addresses[0].port for q in query_route(g.endpoints, topic)})
                         == len(rest) for g in rest), 20, "routes naming the new leaders")
    return rest


def test_a_pull_consumer_keeps_each_queue_across_a_leader_move(cluster):
    topic = "grpc-ids-pull"
    before = create(cluster, topic)
    gws = list(cluster.gateways.values())
    sent = produce(cluster.bootstrap, topic, {p: 3 * (p + 1) for p in range(QUEUES)}, {})
    consumer = PullConsumer([g.endpoints for g in gws], topic, "grpc-ids-pull-g")
    consume_until(consumer, sent, 60)
    assert sorted(consumer.bodies()) == sorted(sent), consumer.refused
    rest = stop_leader_of_0(cluster, topic, before)
    consumer.access = [g.endpoints for g in rest]
    bootstrap = ",".join(g.kafka_bootstrap for g in rest)
    sent += produce(bootstrap, topic, {p: 2 for p in range(QUEUES)}, {p: 3 * (p + 1) for p in range(QUEUES)})
    consume_until(consumer, sent, 60)
    check_one_partition_per_key(consumer, sent)


def test_a_fifo_producers_message_group_stays_on_one_partition_across_a_leader_move(cluster):
    topic, groups = "grpc-ids-fifo", [f"order-{i}" for i in range(12)]
    before = create(cluster, topic)
    access = next(g for n, g in cluster.gateways.items() if n != before[0])  # it stays up
    producer = Producer(config(access.endpoints), (topic,))
    producer.startup()
    try:
        sent = send_groups(producer, message, topic, groups, 0, 3)
        rest = stop_leader_of_0(cluster, topic, before)
        sent += send_groups(producer, message, topic, groups, 3, 3)  # by the route read before the move
    finally:
        producer.shutdown()
    bootstrap = ",".join(g.kafka_bootstrap for g in rest)
    where = wait_for(lambda: (w := partitions_of(bootstrap, topic, QUEUES)) and set(sent) <= set(w) and w, 60,
                     "every send stored")
    groups_at = groups_partitions(where, sent)
    assert all(len(ps) == 1 for ps in groups_at.values()), groups_at
