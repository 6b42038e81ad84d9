"""RocketMQ 5 gRPC over three gateways (each with --grpc-port): QueryRoute names each queue's owner
gateway as its broker (broker-<node id>, as the NameServer route) at the gRPC endpoint it registered
in etcd, with broker-local queue ids; a send or receive at a gateway leading no queue of the topic
is refused FORBIDDEN (the SDK retries another queue of its route), while a receive naming another
broker is served from the queues the gateway leads, as the RocketMQ proxy serves one naming a broker
it does not know (checked against the 5.x proxy: "no new message", not a refusal); the stock Python
SDK's producer spreads its sends over every gateway and one SimpleConsumer receives them all."""
from __future__ import annotations

import collections
import os
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import NODES, require_etcd, start_cluster
from test_cluster_clients import led_by, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grpc"))
from grpc_sdk import GrpcGateway, config, message, receive_all  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
import grpc  # noqa: E402  (grpcio, the SDK's transport)
from rocketmq import FilterExpression, Producer, SimpleConsumer  # noqa: E402

from gateway.grpc.common import Code, d, s  # noqa: E402

TOPIC, SINGLE = "grpc-spread", "grpc-one"
SERVICE = "/apache.rocketmq.v2.MessagingService/"


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    require_etcd()
    cluster = start_cluster(tmp_path_factory.mktemp("grpc-cluster"), NODES, gateway=GrpcGateway)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for topic, count in ((TOPIC, 6), (SINGLE, 1)):
            admin.create_topics([NewTopic(topic, num_partitions=count, replication_factor=1)])[topic].result(10)
        wait_for(lambda: sorted(led_by(cluster.gateways, TOPIC)) == list(NODES), 20, what="every gateway leading")
        yield cluster.gateways
    finally:
        cluster.stop()


def call(gw, method: str, request, response_class, stream: bool = False):
    with grpc.insecure_channel(gw.endpoints) as channel:
        kind = channel.unary_stream if stream else channel.unary_unary
        rpc = kind(SERVICE + method, request_serializer=lambda m: m.SerializeToString(),
                   response_deserializer=response_class.FromString)
        answer = rpc(request, timeout=10)
        return list(answer) if stream else answer


def route(gw, topic: str) -> dict[str, tuple[set, set]]:
    """broker name -> (its queue ids, its endpoints' ports)."""
    got = call(gw, "QueryRoute", s.QueryRouteRequest(topic=d.Resource(name=topic)), s.QueryRouteResponse)
    assert got.status.code == Code.OK, got.status
    out = collections.defaultdict(lambda: (set(), set()))
    for q in got.message_queues:
        assert q.broker.id == 0
        out[q.broker.name][0].add(q.id)
        out[q.broker.name][1].update(a.port for a in q.broker.endpoints.addresses)
    return dict(out)


def test_query_route_names_each_owner_at_its_grpc_endpoint(three):
    gws = three
    want = {f"broker-{n}": ({0, 1}, {g.grpc_port}) for n, g in gws.items()}  # 6 queues, 2 led by each
    for g in gws.values():  # every gateway answers the same
        assert route(g, TOPIC) == want
    owner = next(iter(led_by(gws, SINGLE)))
    assert route(gws[1], SINGLE) == {f"broker-{owner}": ({0}, {gws[owner].grpc_port})}
    assignment = call(gws[2], "QueryAssignment", s.QueryAssignmentRequest(
        topic=d.Resource(name=TOPIC), group=d.Resource(name="assign-g")), s.QueryAssignmentResponse)
    assert sorted((a.message_queue.broker.name, a.message_queue.id) for a in assignment.assignments) == [
        ("broker-1", -1), ("broker-2", -1), ("broker-3", -1)]


def test_a_gateway_refuses_a_topic_it_leads_no_queue_of(three):
    gws = three
    owner = next(iter(led_by(gws, SINGLE)))
    other = next(n for n in NODES if n != owner)
    sent = d.Message(topic=d.Resource(name=SINGLE), body=b"x", system_properties=d.SystemProperties(
        message_id="0100000000000000000000000A", message_type=d.MessageType.NORMAL,
        body_encoding=d.Encoding.IDENTITY))
    refused = call(gws[other], "SendMessage", s.SendMessageRequest(messages=[sent]), s.SendMessageResponse)
    assert refused.status.code == Code.FORBIDDEN, refused.status
    taken = call(gws[owner], "SendMessage", s.SendMessageRequest(messages=[sent]), s.SendMessageResponse)
    assert taken.status.code == Code.OK, taken.status
    assert [a.status.code for a in receive(gws[other], SINGLE, f"broker-{owner}")] == [Code.FORBIDDEN]
    served = receive(gws[owner], SINGLE, f"broker-{other}")
    assert [a.message.body for a in served if a.HasField("message")] == [b"x"]
    assert [a.status.code for a in served if a.HasField("status")] == [Code.OK]


def receive(gw, topic: str, broker: str) -> list:
    """The answers of one ReceiveMessage (no long polling) naming `broker`."""
    request = s.ReceiveMessageRequest(
        group=d.Resource(name="refused-g"), batch_size=1, auto_renew=False,
        message_queue=d.MessageQueue(topic=d.Resource(name=topic), id=0, broker=d.Broker(name=broker)),
        filter_expression=d.FilterExpression(type=d.FilterType.TAG, expression="*"))
    request.invisible_duration.seconds = 30
    return call(gw, "ReceiveMessage", request, s.ReceiveMessageResponse, stream=True)


def test_python_sdk_sends_over_every_gateway_and_one_simple_consumer_receives_all(three):
    gws = three
    producer = Producer(config(gws[1].endpoints), (TOPIC,))
    consumer = SimpleConsumer(config(gws[2].endpoints), "grpc-spread-g", {TOPIC: FilterExpression("*")},
                              await_duration=1)
    producer.startup()
    consumer.startup()
    try:
        bodies = [b"g%03d" % i for i in range(60)]
        receipts = [producer.send(message(TOPIC, body)) for body in bodies]
        brokers = collections.Counter(str(r.message_queue).split(".")[0] for r in receipts)
        assert sorted(brokers) == ["broker-1", "broker-2", "broker-3"], brokers
        got = receive_all(consumer, len(bodies), timeout=60)
        assert sorted(m.body for m in got) == bodies
    finally:
        consumer.shutdown()
        producer.shutdown()
