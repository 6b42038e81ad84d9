"""Consumer group names RocketMQ refuses, on the gRPC port (issue 30): the RocketMQ 5.5 proxy answers
QueryAssignment, AckMessage and ChangeInvisibleDuration naming such a group with ILLEGAL_CONSUMER_GROUP
and its client validator's message (measured with these same requests); the gateway answers the
same, and its UpdateOffset (which the 5.5 proxy does not implement) stores nothing for such a group."""
from __future__ import annotations

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration

from grpc_sdk import GrpcGateway

pytest.importorskip("rocketmq.grpc_protocol.service_pb2")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

ILLEGAL = "contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
CASES = [("nul\x00g", f"the specified group[nul\x00g] {ILLEGAL}"), ("ctl\x01g", f"the specified group[ctl\x01g] {ILLEGAL}"),
         ("dot.g", f"the specified group[dot.g] {ILLEGAL}"),
         ("x" * 121, f"the specified group[{'x' * 121}] is longer than group max length: 120."),
         ("", "the specified group is blank")]


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = GrpcGateway(str(tmp_path_factory.mktemp("grpc-groups") / "data")).start()
    yield g
    g.stop()


@pytest.fixture(scope="module")
def stub(gw):
    channel = grpc.insecure_channel(gw.endpoints)
    yield sg.MessagingServiceStub(channel)
    channel.close()


@pytest.mark.parametrize("group, message", CASES)
def test_a_group_rocketmq_refuses_is_refused_as_the_proxy_does(gw, stub, group, message):
    G, T = d.Resource(name=group), d.Resource(name="NamesG")
    stub.QueryRoute(s.QueryRouteRequest(topic=T), timeout=10)  # auto-creates the topic
    here = d.Endpoints(scheme=d.IPv4, addresses=[d.Address(host="127.0.0.1", port=gw.grpc_port)])
    answers = [
        stub.QueryAssignment(s.QueryAssignmentRequest(topic=T, group=G, endpoints=here), timeout=10),
        stub.AckMessage(s.AckMessageRequest(group=G, topic=T, entries=[s.AckMessageEntry(message_id="x", receipt_handle="y")]),
                        timeout=10),
        stub.ChangeInvisibleDuration(s.ChangeInvisibleDurationRequest(group=G, topic=T, receipt_handle="y", message_id="x",
                                                                      invisible_duration=Duration(seconds=30)), timeout=10),
        stub.UpdateOffset(s.UpdateOffsetRequest(group=G, message_queue=d.MessageQueue(topic=T, id=0), offset=0), timeout=10),
    ]
    assert [(a.status.code, a.status.message) for a in answers] == [(d.Code.ILLEGAL_CONSUMER_GROUP, message)] * 4


def test_nothing_is_stored_for_refused_groups_and_kafka_admin_clients_list_the_rest(gw, stub):
    from confluent_kafka.admin import AdminClient
    for group, _ in CASES:
        stub.UpdateOffset(s.UpdateOffsetRequest(group=d.Resource(name=group),
                                                message_queue=d.MessageQueue(topic=d.Resource(name="NamesG"), id=0),
                                                offset=0), timeout=10)
    good = d.Resource(name="good_group-1")
    answer = stub.UpdateOffset(s.UpdateOffsetRequest(group=good, message_queue=d.MessageQueue(
        topic=d.Resource(name="NamesG"), id=0), offset=0), timeout=10)
    assert answer.status.code == d.Code.OK
    admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
    listed = admin.list_consumer_groups(request_timeout=20).result()
    assert [g.group_id for g in listed.valid] == ["good_group-1"] and not listed.errors
    described = admin.describe_consumer_groups(["good_group-1"], request_timeout=20)["good_group-1"].result()
    assert described.group_id == "good_group-1"
