"""`python -m gateway --shards 2 --http-port H --grpc-port G`, real: shard 0's ports answer for every
shard. /metrics on H carries each shard's samples (label `shard`) and `rocketgate_shard_up`, so the
records produced to partitions of both shards are all counted there; the stock Python RocketMQ 5
SDK, given only shard 0's gRPC endpoint, sends to queues of both shards (QueryRoute names each
shard's own gRPC endpoint) and one SimpleConsumer on shard 0's endpoint receives every message."""
from __future__ import annotations

import collections
import os
import sys

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_process import free_port
from sharded import Sharded, require_etcd, wait_for
from test_shards import create_topic, produce

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grpc"))
from grpc_sdk import config, message, receive_all  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
from grpc_queue_clients import query_route  # noqa: E402

TOPIC, GRPC_TOPIC, RECORDS = "sharded-metered", "sharded-grpc", 120


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    require_etcd()
    gw = Sharded(str(tmp_path_factory.mktemp("shards-ports")))
    gw.http_port, gw.grpc_port = free_port(), free_port()
    gw.extra_args += ["--http-port", str(gw.http_port), "--grpc-port", str(gw.grpc_port)]
    try:
        gw.start()
        yield gw
    finally:
        gw.stop()


def scrape(gw: Sharded) -> dict[str, list]:
    text = httpx.get(f"http://127.0.0.1:{gw.http_port}/metrics", timeout=10).text
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_shard_0s_metrics_count_the_records_of_every_shard(sharded):
    leaders = create_topic(sharded, TOPIC)
    assert set(leaders.values()) == {1, 2}
    produce(sharded, TOPIC, [b"m%03d" % i for i in range(RECORDS)])

    def appended_per_shard():
        samples = scrape(sharded)["rocketgate_messages_appended"]
        per_shard = collections.Counter()
        for s in samples:
            if s.labels.get("topic") == TOPIC:
                per_shard[s.labels["shard"]] += s.value
        return sum(per_shard.values()) == RECORDS and per_shard
    per_shard = wait_for(appended_per_shard, 20, what=f"/metrics to count all {RECORDS} records")
    assert set(per_shard) == {"0", "1"} and all(per_shard.values())
    up = {s.labels["shard"]: s.value for s in scrape(sharded)["rocketgate_shard_up"]}
    assert up == {"0": 1.0, "1": 1.0}


def test_a_grpc_client_of_shard_0_reaches_the_queues_of_every_shard(sharded):
    pytest.importorskip("rocketmq")
    from rocketmq import FilterExpression, Producer, SimpleConsumer
    create_topic(sharded, GRPC_TOPIC)
    endpoint = f"127.0.0.1:{sharded.grpc_port}"
    producer = Producer(config(endpoint), (GRPC_TOPIC,))
    consumer = SimpleConsumer(config(endpoint), "sharded-grpc-g", {GRPC_TOPIC: FilterExpression("*")},
                              await_duration=1)
    producer.startup()
    consumer.startup()
    try:
        bodies = [b"g%03d" % i for i in range(40)]
        receipts = [producer.send(message(GRPC_TOPIC, body)) for body in bodies]
        # every queue by its own name (docs/cluster.md, "RocketMQ 5 gRPC"), at both shards' endpoints
        queues = collections.Counter(str(r.message_queue).split(".")[0] for r in receipts)
        assert sorted(queues) == [f"queue-{q}" for q in range(len(queues))] and len(queues) >= 2, queues
        assert len({q.broker.endpoints.addresses[0].port for q in query_route(endpoint, GRPC_TOPIC)}) == 2
        got = receive_all(consumer, len(bodies), timeout=60)
        assert sorted(m.body for m in got) == bodies
    finally:
        consumer.shutdown()
        producer.shutdown()
