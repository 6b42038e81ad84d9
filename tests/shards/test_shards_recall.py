"""gRPC RecallMessage under `python -m gateway --shards 2 --grpc-port G` (issue 25): a delayed
message waits in the schedule of the shard that took its send, while the SDKs send RecallMessage to
their access point (rocketmq-client-java 5.2.0: the configured endpoints, here shard 0). The recall
handle names the shard holding the message and shard 0 passes the recall there (CLUSTER_RECALL).
Before, shard 0 marked its own schedule, answered OK, and the message was delivered when due (the
Java SDK's recall case of tests/grpc failed so under `make test-shards` when its send went to shard 1)."""
from __future__ import annotations

import os
import sys
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gateway_process import free_port
from sharded import Sharded, require_etcd, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grpc"))
grpc = pytest.importorskip("grpc")
from grpc_queue_clients import query_route  # noqa: E402
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2_grpc as sg  # noqa: E402
from test_grpc_recall_types import _message, recall, send  # noqa: E402

pytestmark = pytest.mark.timeout(300)
TOPIC = "sharded-recall"


def test_a_recall_at_shard_0_cancels_a_message_another_shard_scheduled(tmp_path):
    require_etcd()
    sharded = Sharded(str(tmp_path))
    sharded.grpc_port = free_port()
    sharded.extra_args += ["--grpc-port", str(sharded.grpc_port)]
    access = f"127.0.0.1:{sharded.grpc_port}"
    sharded.start()
    channels = []
    try:
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
        route = wait_for(lambda: (r := query_route(access, TOPIC)) and len(r) == 2 and r, what="a gRPC route")
        endpoints = {f"{a.host}:{a.port}" for q in route for a in q.broker.endpoints.addresses}
        (other,) = endpoints - {access}  # shard 1's gRPC endpoint: it leads one of the two queues
        stubs = []
        for endpoint in (access, other):
            channels.append(grpc.insecure_channel(endpoint))
            stubs.append(sg.MessagingServiceStub(channels[-1]))
        due = int(time.time() * 1000) + 4000
        kept = send(stubs[1], _message(TOPIC, b"kept", d.MessageType.DELAY, due))
        gone = send(stubs[1], _message(TOPIC, b"recalled", d.MessageType.DELAY, due))
        assert kept.status.code == gone.status.code == d.Code.OK, (kept.status, gone.status)
        answer = recall(stubs[0], TOPIC, gone.entries[0].recall_handle)  # at the access point, as the SDKs
        assert answer.status.code == d.Code.OK, answer.status
        c = Consumer({"bootstrap.servers": sharded.kafka_bootstrap, "group.id": "sharded-recall-g"})
        try:
            c.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
            got, until = [], time.monotonic() + 60
            while time.monotonic() < until:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append(m.value())
                    if m.value() == b"kept":  # due with it: "recalled" would come within a few seconds
                        until = min(until, time.monotonic() + 3)
        finally:
            c.close()
        assert got == [b"kept"]
    finally:
        for channel in channels:
            channel.close()
        sharded.stop()
