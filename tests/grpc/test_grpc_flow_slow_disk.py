"""A slow disk must not stall the gateway through gRPC SendMessage either: while a send's store write
is blocked (`--store-write-delay-ms`, a throttled disk on demand; the RocketMQ proxy has no such
switch, so this runs against the gateway only), QueryRoute on another channel is still answered,
and a send that comes while the write has held the store past `--os-page-cache-busy-timeout-ms` is
refused at once with the proxy's code for a broker's SYSTEM_BUSY (TOO_MANY_REQUESTS) and RocketMQ's
[PC_SYNCHRONIZED] remark. The order of the answers is what is asserted (the write lasts 1.5 s, the
other requests come 0.6 s into it), not their latency."""
from __future__ import annotations

import threading
import time

import grpc
import pytest

from grpc_sdk import GrpcGateway
from semantics.flow_control import PC_BUSY

pytest.importorskip("rocketmq.grpc_protocol.service_pb2")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

DELAY_S = 1.5
TOPIC = "SlowG"


@pytest.fixture
def gw(tmp_path):
    g = GrpcGateway(str(tmp_path / "data"), ["--store-write-delay-ms", str(int(DELAY_S * 1000)),
                                             "--os-page-cache-busy-timeout-ms", "300"]).start()
    yield g
    g.stop()


def _stub(gw):
    return sg.MessagingServiceStub(grpc.insecure_channel(gw.endpoints))


def _send(stub, body: bytes):
    m = d.Message(topic=d.Resource(name=TOPIC), body=body,
                  system_properties=d.SystemProperties(message_id=body.hex(), message_type=d.MessageType.NORMAL))
    return stub.SendMessage(s.SendMessageRequest(messages=[m]), timeout=30).status


def _route(stub):
    return stub.QueryRoute(s.QueryRouteRequest(topic=d.Resource(name=TOPIC)), timeout=30).status.code


def test_route_lookups_and_refusals_do_not_wait_for_a_blocked_send(gw):
    producer = _stub(gw)
    assert _route(producer) == d.Code.OK  # creates the topic
    assert _send(producer, b"one").code == d.Code.OK  # slow: the disk is seen slow
    time.sleep(DELAY_S + 0.1)  # the busy period that write started (it ran on the loop) is over

    answered = []  # (what, status code), in the order the answers arrived

    def slow_send():
        answered.append(("slow send", _send(producer, b"two").code))

    sender = threading.Thread(target=slow_send)
    sender.start()
    time.sleep(0.6)  # the write is in progress, past the 300 ms busy limit
    answered.append(("route", _route(_stub(gw))))
    refused = _send(_stub(gw), b"three")
    answered.append(("refused send", refused.code))
    sender.join(30)
    assert answered == [("route", d.Code.OK), ("refused send", d.Code.TOO_MANY_REQUESTS), ("slow send", d.Code.OK)]
    assert refused.message == PC_BUSY
