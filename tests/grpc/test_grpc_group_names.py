"""Consumer group names RocketMQ refuses, on the gRPC port (issue 30): the RocketMQ 5.5 proxy answers
QueryAssignment, AckMessage and ChangeInvisibleDuration naming such a group with ILLEGAL_CONSUMER_GROUP
and its client validator's message (GRPC_TARGET=proxy runs the first test against it); the gateway
answers the same, and its UpdateOffset (which the 5.5 proxy does not implement) stores nothing for
such a group."""
from __future__ import annotations

import os

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration

from grpc_sdk import start_target

pytest.importorskip("rocketmq.grpc_protocol.service_pb2")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

ILLEGAL = "contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
CASES = [("nul\x00g", f"the specified group[nul\x00g] {ILLEGAL}"), ("ctl\x01g", f"the specified group[ctl\x01g] {ILLEGAL}"),
         ("dot.g", f"the specified group[dot.g] {ILLEGAL}"),
         ("x" * 121, f"the specified group[{'x' * 121}] is longer than group max length: 120."),
         ("", "the specified group is blank")]


PROXY = os.environ.get("GRPC_TARGET") == "proxy"
MD = [("x-mq-client-id", "names-1"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2"), ("x-mq-client-version", "5.0.0")]


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = start_target(str(tmp_path_factory.mktemp("grpc-groups") / "data"), {"NamesG": "NORMAL"})
    channel = grpc.insecure_channel(g.endpoints)
    g.stub = sg.MessagingServiceStub(channel)
    yield g
    channel.close()
    g.stop()


@pytest.mark.parametrize("group, message", CASES)
def test_a_group_rocketmq_refuses_is_refused_as_the_proxy_does(gw, group, message):
    stub = gw.stub
    G, T = d.Resource(name=group), d.Resource(name="NamesG")
    stub.QueryRoute(s.QueryRouteRequest(topic=T), timeout=10, metadata=MD)  # auto-creates the topic
    here = d.Endpoints(scheme=d.IPv4, addresses=[d.Address(host="127.0.0.1", port=gw.grpc_port)])
    answers = [
        stub.QueryAssignment(s.QueryAssignmentRequest(topic=T, group=G, endpoints=here), timeout=10, metadata=MD),
        stub.AckMessage(s.AckMessageRequest(group=G, topic=T, entries=[s.AckMessageEntry(message_id="x", receipt_handle="y")]),
                        timeout=10, metadata=MD),
        stub.ChangeInvisibleDuration(s.ChangeInvisibleDurationRequest(group=G, topic=T, receipt_handle="y", message_id="x",
                                                                      invisible_duration=Duration(seconds=30)), timeout=10, metadata=MD),
    ]
    if not PROXY:  # the 5.5 proxy does not implement UpdateOffset
        answers.append(stub.UpdateOffset(s.UpdateOffsetRequest(group=G, message_queue=d.MessageQueue(topic=T, id=0),
                                                               offset=0), timeout=10, metadata=MD))
    assert [(a.status.code, a.status.message) for a in answers] == [(d.Code.ILLEGAL_CONSUMER_GROUP, message)] * len(answers)


@pytest.mark.skipif(PROXY, reason="UpdateOffset and the Kafka port: the gateway only")
def test_nothing_is_stored_for_refused_groups_and_kafka_admin_clients_list_the_rest(gw):
    from confluent_kafka.admin import AdminClient
    stub = gw.stub
    for group, _ in CASES:
        stub.UpdateOffset(s.UpdateOffsetRequest(group=d.Resource(name=group),
                                                message_queue=d.MessageQueue(topic=d.Resource(name="NamesG"), id=0),
                                                offset=0), timeout=10, metadata=MD)
    good = d.Resource(name="good_group-1")
    route = stub.QueryRoute(s.QueryRouteRequest(topic=d.Resource(name="NamesG")), timeout=10, metadata=MD)
    # a queue of this endpoint's broker, named as the route names it (one process, or a shard of several)
    mq = next(q for q in route.message_queues if any(a.port == gw.grpc_port for a in q.broker.endpoints.addresses))
    answer = stub.UpdateOffset(s.UpdateOffsetRequest(group=good, message_queue=d.MessageQueue(
        topic=d.Resource(name="NamesG"), id=mq.id, broker=mq.broker), offset=0), timeout=10, metadata=MD)
    assert answer.status.code == d.Code.OK
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    listed = admin.list_consumer_groups(request_timeout=20).result()
    assert [g.group_id for g in listed.valid] == ["good_group-1"] and not listed.errors
    described = admin.describe_consumer_groups(["good_group-1"], request_timeout=20)["good_group-1"].result()
    assert described.group_id == "good_group-1"
