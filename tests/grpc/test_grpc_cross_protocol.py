"""One system: the gRPC SDK, Kafka clients and remoting clients on the same topics and groups.
gRPC producer -> Kafka consumer and remoting consumer; Kafka producer -> gRPC consumer; the
PullConsumer calls and offsets through the one offset table."""
from __future__ import annotations

import time

import grpc
import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer

from client import ConsumeFrom, LitePullConsumer
from grpc_sdk import GrpcGateway, config, message, receive_all

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import FilterExpression, Producer, SimpleConsumer  # noqa: E402
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = GrpcGateway(str(tmp_path_factory.mktemp("grpc-cross") / "data")).start()
    yield g
    g.stop()


def send_grpc(gw, topic, n):
    p = Producer(config(gw.endpoints), (topic,))
    p.startup()
    try:
        for i in range(n):
            p.send(message(topic, f"g{i}".encode(), tag="TX", keys=[f"key{i}"], props={"origin": "grpc"}))
    finally:
        p.shutdown()


def test_grpc_producer_to_kafka_and_remoting_consumers(gw):
    send_grpc(gw, "x-grpc", 6)
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "x-kafka", "auto.offset.reset": "earliest"})
    c.subscribe(["x-grpc"])
    got, deadline = [], time.monotonic() + 30
    while len(got) < 6 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    c.close()
    assert sorted(m.value() for m in got) == [f"g{i}".encode() for i in range(6)]
    for m in got:
        headers = dict(m.headers())
        assert headers["TAGS"] == b"TX" and headers["origin"] == b"grpc"
        assert m.key() == b"key" + m.value()[1:]

    r = LitePullConsumer("x-remoting", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    r.subscribe("x-grpc", "TX")
    r.start()
    got, deadline = [], time.monotonic() + 30
    while len(got) < 6 and time.monotonic() < deadline:
        got.extend(r.poll(1.0))
    r.shutdown()
    assert sorted(m.body for m in got) == [f"g{i}".encode() for i in range(6)]
    assert all(m.properties["origin"] == "grpc" and m.properties["TAGS"] == "TX" for m in got)


def test_kafka_producer_to_grpc_consumer(gw):
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "linger.ms": 5})
    for i in range(8):
        p.produce("x-kafka", f"k{i}".encode(), key=f"key{i}".encode(),
                  headers=[("TAGS", b"A" if i % 2 == 0 else b"B"), ("h", b"v")])
    assert p.flush(20) == 0
    c = SimpleConsumer(config(gw.endpoints), "x-kafka-g", {"x-kafka": FilterExpression("A")}, await_duration=2)
    c.startup()
    try:
        got = receive_all(c, 4)
        assert sorted(m.body for m in got) == [f"k{i}".encode() for i in range(0, 8, 2)]
        assert all(m.tag == "A" and m.properties.get("h") == "v" for m in got)
        assert c.receive(16, 30) == []
    finally:
        c.shutdown()


def test_pull_consumer_calls_and_the_one_offset_table(gw):
    send_grpc(gw, "x-pull", 3)
    topic, group = d.Resource(name="x-pull"), d.Resource(name="x-pull-g")
    channels = {"(bootstrap)": grpc.insecure_channel(gw.endpoints)}

    def stub_of(broker):  # each queue at its broker's endpoint, as the route names it (one, or each shard)
        address = broker.endpoints.addresses[0]
        channel = channels.get(broker.name) or grpc.insecure_channel(f"{address.host}:{address.port}")
        channels[broker.name] = channel
        return sg.MessagingServiceStub(channel)

    try:
        route = sg.MessagingServiceStub(channels["(bootstrap)"]).QueryRoute(s.QueryRouteRequest(topic=topic), timeout=10)
        queues = {(q.broker.name, q.id): q for q in route.message_queues}
        bodies = []
        for q in queues.values():
            stub, mq = stub_of(q.broker), d.MessageQueue(topic=topic, id=q.id, broker=q.broker)
            end = stub.QueryOffset(s.QueryOffsetRequest(message_queue=mq, query_offset_policy=d.QueryOffsetPolicy.END),
                                   timeout=5)
            if end.offset == 0:
                continue
            out = list(stub.PullMessage(s.PullMessageRequest(group=group, message_queue=mq, offset=0, batch_size=32),
                                        timeout=10))
            assert out[0].status.code == d.Code.OK and out[-1].next_offset == end.offset
            bodies += [r.message.body for r in out if r.HasField("message")]
            assert stub.UpdateOffset(s.UpdateOffsetRequest(group=group, message_queue=mq, offset=end.offset),
                                     timeout=5).status.code == d.Code.OK
            assert stub.GetOffset(s.GetOffsetRequest(group=group, message_queue=mq), timeout=5).offset == end.offset
        assert sorted(bodies) == [b"g0", b"g1", b"g2"]
        missing = stub.GetOffset(s.GetOffsetRequest(group=d.Resource(name="x-none"), message_queue=mq), timeout=5)
        assert missing.status.code == d.Code.OFFSET_NOT_FOUND
    finally:
        for channel in channels.values():
            channel.close()
    # The committed offsets are the group's offsets for Kafka too.
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "x-pull-g", "enable.auto.commit": False})
    from confluent_kafka import TopicPartition
    committed = c.committed([TopicPartition("x-pull", q) for q in range(4)], timeout=10)
    c.close()
    assert sum(tp.offset for tp in committed if tp.offset >= 0) == 3
