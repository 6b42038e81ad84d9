"""gRPC queue ids under `python -m gateway --shards 2 --grpc-port G` (issue 25, docs/cluster.md
"RocketMQ 5 gRPC"): the shards are a cluster on one machine, so a queue moved from one shard to the
other (`rocketgate cluster move`) must keep its route name and id. A pull consumer keyed by the
route's (broker name, queue id) reads every stored message once, each key one partition in order,
and the stock Python SDK's FIFO producer, started at shard 0's port before the move, keeps each
message group on one partition. Before, the route numbered each shard's queues by rank
(broker-<node>, 0..k-1): the move renumbered them (the consumer read partitions from another's
offset) and a group's sends went to the first queue the receiving shard led."""
from __future__ import annotations

import os
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from gateway_process import free_port
from sharded import Sharded, require_etcd, wait_for
from test_shards_move import cluster_cli

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grpc"))
from grpc_queue_clients import (PullConsumer, check_one_partition_per_key, consume_until,  # noqa: E402
                                groups_partitions, partitions_of, produce, query_route, send_groups)
from grpc_sdk import config, message  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import Producer  # noqa: E402

pytestmark = pytest.mark.timeout(300)
TOPIC, QUEUES = "sharded-grpc-ids", 4


def leaders(bootstrap: str) -> dict[int, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10)
    return {p: m.leader for p, m in md.topics[TOPIC].partitions.items()}


def test_grpc_queue_ids_keep_their_meaning_when_a_queue_moves_between_shards(tmp_path):
    require_etcd()
    sharded = Sharded(str(tmp_path))
    sharded.grpc_port = free_port()
    sharded.extra_args += ["--grpc-port", str(sharded.grpc_port)]
    endpoint = f"127.0.0.1:{sharded.grpc_port}"
    sharded.start()
    try:
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, QUEUES, 1)])[TOPIC].result(30)
        before = wait_for(lambda: (ls := leaders(sharded.kafka_bootstrap)) and set(ls.values()) == {1, 2} and ls,
                          what="both shards leading")
        wait_for(lambda: len(query_route(endpoint, TOPIC)) == QUEUES, what="a gRPC route")
        sent = produce(sharded.kafka_bootstrap, TOPIC, {p: 3 * (p + 1) for p in range(QUEUES)}, {})
        consumer = PullConsumer([endpoint], TOPIC, "sharded-grpc-ids-g")
        consume_until(consumer, sent, 60)
        assert sorted(consumer.bodies()) == sorted(sent), consumer.refused
        groups = [f"order-{i}" for i in range(8)]
        producer = Producer(config(endpoint), (TOPIC,))
        producer.startup()
        try:
            grouped = send_groups(producer, message, TOPIC, groups, 0, 2)
            moved = min(p for p, n in before.items() if n == 1)  # shard 0's lowest queue moves to shard 1
            done = cluster_cli(sharded.data_dir, "move", TOPIC, str(moved), "--to", "2")
            assert done.returncode == 0, done.stderr
            wait_for(lambda: leaders(sharded.kafka_bootstrap)[moved] == 2, what="the new leader")
            wait_for(lambda: {q.broker.endpoints.addresses[0].port for q in query_route(endpoint, TOPIC)
                              if q.id == moved} != {sharded.grpc_port}, what="the route naming it")
            grouped += send_groups(producer, message, TOPIC, groups, 2, 2)  # by the route read before the move
        finally:
            producer.shutdown()
        sent += produce(sharded.kafka_bootstrap, TOPIC, {p: 2 for p in range(QUEUES)},
                        {p: 3 * (p + 1) for p in range(QUEUES)})
        consume_until(consumer, sent, 60)
        where = wait_for(lambda: (w := partitions_of(sharded.kafka_bootstrap, TOPIC, QUEUES))
                         and set(grouped) <= set(w) and w, 60, "every FIFO send stored")
    finally:
        sharded.stop()
    check_one_partition_per_key(consumer, sent)
    groups_at = groups_partitions(where, grouped)
    assert all(len(ps) == 1 for ps in groups_at.values()), groups_at
