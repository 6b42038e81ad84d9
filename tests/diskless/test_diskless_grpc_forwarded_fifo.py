"""A gRPC receive that reaches a diskless bucket's non-owner gateway and is forwarded to the POP
owner (gateway.diskless_pop_grpc) gives what a receive served locally gives (issue 28):
- FIFO: the messages of a message group come in order, and the next one is not handed out while the
  one before is unacknowledged (as tests/grpc/test_grpc_python_sdk.py's
  test_fifo_queue_is_held_while_a_message_is_in_flight, checked against the RocketMQ 5 proxy, shows
  locally). Before, the owner served the forwarded POP without the hold: the next message came at once.
- auto-renew: a push consumer's receive (auto_renew, the invisible time 12 s) keeps its message
  invisible past that time while the connection lives (gateway.grpc.renew), here and through the
  non-owner alike. Before, the non-owner looked for the lease in its own state, did not find it and
  never renewed: the message came back to the group at the owner after 12 s.
Two gateways share the bucket: a (up first, the POP owner) and b; raw gRPC stubs name the gateway
each call goes to (the SDKs follow the route, which names the owner). Long (~25-40 s a case):
tests/long_tests.txt."""
from __future__ import annotations

import os
import sys
import time
import uuid

import pytest

from test_diskless_grpc_old_owner import _TwoGateways

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "grpc"))
grpc = pytest.importorskip("grpc")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

pytestmark = pytest.mark.timeout(240)
METADATA = (("x-mq-client-id", "dlfifo@1@0@" + uuid.uuid4().hex[:8]), ("x-mq-language", "PYTHON"),
            ("x-mq-protocol", "v2"), ("x-mq-client-version", "5.0.0"))
N, INVISIBLE_S = 4, 12


def _send(endpoints: str, topic: str, bodies, group: str | None = None) -> None:
    with grpc.insecure_channel(endpoints) as channel:
        stub = sg.MessagingServiceStub(channel)
        for body in bodies:
            sp = d.SystemProperties(message_id=uuid.uuid4().hex.upper(), body_encoding=d.Encoding.IDENTITY,
                                    message_type=d.MessageType.FIFO if group else d.MessageType.NORMAL,
                                    born_host="127.0.0.1", queue_id=0, message_group=group)
            sp.born_timestamp.FromMilliseconds(int(time.time() * 1000))
            sent = stub.SendMessage(s.SendMessageRequest(messages=[d.Message(
                topic=d.Resource(name=topic), system_properties=sp, body=body)]), metadata=METADATA, timeout=15)
            assert sent.status.code == d.Code.OK, sent.status


def _receive(stub, topic: str, poll_s: int = 2, batch: int = 1, auto_renew: bool = False) -> list:
    req = s.ReceiveMessageRequest(group=d.Resource(name=topic + "-g"), batch_size=batch, auto_renew=auto_renew,
                                  message_queue=d.MessageQueue(topic=d.Resource(name=topic), id=-1))
    req.invisible_duration.FromSeconds(INVISIBLE_S)
    req.long_polling_timeout.FromSeconds(poll_s)
    answers = list(stub.ReceiveMessage(req, metadata=METADATA, timeout=poll_s + 15))
    return [a.message for a in answers if a.HasField("message")]


def _ack(stub, topic: str, m) -> int:
    resp = stub.AckMessage(s.AckMessageRequest(
        group=d.Resource(name=topic + "-g"), topic=d.Resource(name=topic),
        entries=[s.AckMessageEntry(message_id=m.system_properties.message_id,
                                   receipt_handle=m.system_properties.receipt_handle)]), metadata=METADATA, timeout=15)
    return resp.status.code


def test_a_fifo_group_received_through_a_non_owner_is_held_and_in_order(request, tmp_path):
    topic = "gdl-fifo"
    gateways = _TwoGateways(request, tmp_path, topic)
    try:
        _send(gateways.a.endpoints, topic, [b"m%d" % i for i in range(N)], group="order-1")
        order, held = [], []
        with grpc.insecure_channel(gateways.b.endpoints) as at_b, grpc.insecure_channel(gateways.a.endpoints) as at_a:
            b, a = sg.MessagingServiceStub(at_b), sg.MessagingServiceStub(at_a)
            deadline = time.monotonic() + 60
            while len(order) < N and time.monotonic() < deadline:
                got = _receive(b, topic)
                if not got:
                    continue
                assert len(got) == 1 and got[0].system_properties.message_group == "order-1"
                order.append(got[0].body)
                held += [m.body for m in _receive(b, topic, poll_s=1)]  # before: the group's next one
                if len(order) == 1:  # the owner's state was used (not b's own): a hands nothing out either
                    held += [m.body for m in _receive(a, topic, poll_s=1)]
                assert _ack(b, topic, got[0]) == d.Code.OK
        assert (order, held) == ([b"m%d" % i for i in range(N)], [])
    finally:
        gateways.stop()


@pytest.mark.parametrize("via", ["owner", "non-owner"])
def test_an_auto_renew_receive_keeps_its_message_invisible_past_its_time(request, tmp_path, via):
    topic = "gdl-renew"
    gateways = _TwoGateways(request, tmp_path, topic)
    try:
        _send(gateways.a.endpoints, topic, [b"long-job"])
        receiver = gateways.b if via == "non-owner" else gateways.a
        with grpc.insecure_channel(receiver.endpoints) as push, grpc.insecure_channel(gateways.a.endpoints) as other:
            consumer, owner = sg.MessagingServiceStub(push), sg.MessagingServiceStub(other)
            got, deadline = [], time.monotonic() + 30
            while not got and time.monotonic() < deadline:
                got = _receive(consumer, topic, auto_renew=True)
            assert [m.body for m in got] == [b"long-job"]
            received_at, again = time.monotonic(), []
            while time.monotonic() < received_at + INVISIBLE_S + 8:  # past the invisible time asked for
                again += [(m.body, m.system_properties.delivery_attempt) for m in _receive(owner, topic)]
            assert again == []  # before, through the non-owner: [(b"long-job", 2)]
            assert _ack(consumer, topic, got[0]) == d.Code.OK
    finally:
        gateways.stop()
