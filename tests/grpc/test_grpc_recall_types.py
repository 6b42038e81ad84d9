"""RecallMessage (RocketMQ 5.3+: cancel a delayed message by the recall handle its send answered),
the per-topic message type check (a topic's `message.type` attribute; a send of another type is
refused with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE) and server-side lease renewal (ReceiveMessage
with auto_renew), through raw gRPC stubs of the apache.rocketmq.v2 schema. With GRPC_TARGET=proxy they run against Apache RocketMQ's own proxy."""
from __future__ import annotations

import base64
import os
import threading
import time
import uuid

import pytest

from grpc_sdk import start_target

grpc = pytest.importorskip("grpc")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

pytestmark = pytest.mark.timeout(900)  # the module fixture may start a real proxy (GRPC_TARGET=proxy)
TOPICS = {"rc-delay": "DELAY", "rc-fifo": "FIFO", "rc-normal": "NORMAL", "rc-renew": "NORMAL", "rc-plain": "NORMAL"}
METADATA = (("x-mq-client-id", "recall-test@1@0@" + uuid.uuid4().hex[:8]), ("x-mq-language", "PYTHON"),
            ("x-mq-protocol", "v2"), ("x-mq-client-version", "5.0.0"))


def typed_topics(gw) -> None:
    """On the gateway, create TOPICS with their message.type as mqadmin updateTopic does."""
    from codec.remoting import RequestCode as RC
    from remoting.wire import Peer
    peer = Peer(gw.namesrv)
    try:
        for topic, kind in TOPICS.items():
            r = peer.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": 4, "writeQueueNums": 4,
                                                       "perm": 6, "attributes": f"+message.type={kind}"})
            assert r.code == 0, r.remark
    finally:
        peer.close()


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = start_target(str(tmp_path_factory.mktemp("grpc-recall") / "data"), TOPICS)
    if os.environ.get("GRPC_TARGET") != "proxy":
        typed_topics(g)
    yield g
    g.stop()


@pytest.fixture(scope="module")
def stub(gw):
    channel = grpc.insecure_channel(gw.endpoints)
    yield sg.MessagingServiceStub(channel)
    channel.close()


def _message(topic: str, body: bytes, kind: int, due_ms: int | None = None, group: str = ""):
    sp = d.SystemProperties(message_id=uuid.uuid4().hex.upper(), body_encoding=d.Encoding.IDENTITY,
                            message_type=kind, born_host="127.0.0.1")
    sp.born_timestamp.FromMilliseconds(int(time.time() * 1000))
    if due_ms is not None:
        sp.delivery_timestamp.FromMilliseconds(due_ms)
    if group:
        sp.message_group = group
    return d.Message(topic=d.Resource(name=topic), system_properties=sp, body=body)


def send(stub, msg):
    return stub.SendMessage(s.SendMessageRequest(messages=[msg]), metadata=METADATA, timeout=10)


def recall(stub, topic: str, handle: str):
    return stub.RecallMessage(s.RecallMessageRequest(topic=d.Resource(name=topic), recall_handle=handle),
                              metadata=METADATA, timeout=10)


class Consumer:
    """A consumer client of group "<topic>-g": its own client id, whose Settings went first on a
    Telemetry stream kept open until `close()` (the proxy answers Heartbeat and ReceiveMessage only
    for clients whose Settings it holds)."""

    def __init__(self, stub, topic: str, kind=d.ClientType.SIMPLE_CONSUMER) -> None:
        self.stub, self.topic = stub, topic
        self.metadata = (("x-mq-client-id", f"{topic}@1@0@{uuid.uuid4().hex[:8]}"),) + METADATA[1:]
        settings = d.Settings(client_type=kind, subscription=d.Subscription(
            group=d.Resource(name=f"{topic}-g"), subscriptions=[d.SubscriptionEntry(
                topic=d.Resource(name=topic), expression=d.FilterExpression(type=d.FilterType.TAG, expression="*"))]))
        settings.request_timeout.FromSeconds(10)
        settings.subscription.long_polling_timeout.FromSeconds(2)
        self._done = threading.Event()

        def commands():
            yield s.TelemetryCommand(settings=settings)
            self._done.wait()
        self._stream = stub.Telemetry(commands(), metadata=self.metadata)
        next(self._stream)  # the server's answer to the Settings
        hb = s.HeartbeatRequest(group=d.Resource(name=f"{topic}-g"), client_type=kind)
        assert stub.Heartbeat(hb, metadata=self.metadata, timeout=10).status.code == d.Code.OK

    def close(self) -> None:
        self._done.set()
        self._stream.cancel()


def receive_once(consumer: Consumer, invisible_s: int = 30, auto_renew: bool = False) -> list:
    """One ReceiveMessage of the consumer's group (a 2 s long poll): the messages, not acknowledged."""
    stub, topic = consumer.stub, consumer.topic
    req = s.ReceiveMessageRequest(group=d.Resource(name=f"{topic}-g"),
                                  message_queue=d.MessageQueue(topic=d.Resource(name=topic), id=-1,
                                                               broker=d.Broker(name="broker-a")),
                                  filter_expression=d.FilterExpression(type=d.FilterType.TAG, expression="*"),
                                  batch_size=16, auto_renew=auto_renew)
    req.invisible_duration.FromSeconds(invisible_s)
    req.long_polling_timeout.FromSeconds(2)
    out = []
    for r in stub.ReceiveMessage(req, metadata=consumer.metadata, timeout=10):
        if r.WhichOneof("content") == "message":
            out.append(r.message)
        elif r.WhichOneof("content") == "status":
            assert r.status.code in (d.Code.OK, d.Code.MESSAGE_NOT_FOUND), r.status
    return out


def ack(consumer: Consumer, message):
    stub, topic = consumer.stub, consumer.topic
    req = s.AckMessageRequest(group=d.Resource(name=f"{topic}-g"), topic=d.Resource(name=topic), entries=[
        s.AckMessageEntry(message_id=message.system_properties.message_id,
                          receipt_handle=message.system_properties.receipt_handle)])
    return stub.AckMessage(req, metadata=consumer.metadata, timeout=10).status


def receive(stub, topic: str, seconds: float) -> list[bytes]:
    """Bodies received (and acknowledged) by group "<topic>-g" within `seconds`."""
    consumer, bodies, deadline = Consumer(stub, topic), [], time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for m in receive_once(consumer):
                bodies.append(m.body)
                assert ack(consumer, m).code == d.Code.OK
    finally:
        consumer.close()
    return bodies


def test_a_recalled_delayed_message_is_never_delivered(stub):
    due = int(time.time() * 1000) + 4000
    kept = send(stub, _message("rc-delay", b"kept", d.MessageType.DELAY, due))
    gone_msg = _message("rc-delay", b"recalled", d.MessageType.DELAY, due)
    gone = send(stub, gone_msg)
    assert kept.status.code == gone.status.code == d.Code.OK
    handle = gone.entries[0].recall_handle
    fields = base64.urlsafe_b64decode(handle).decode().split(" ")
    assert fields[:3] + fields[4:] == ["v1", "rc-delay", "broker-a", gone_msg.system_properties.message_id]
    assert abs(int(fields[3]) - due) <= 1000  # RocketMQ's timer wheel keeps deliver times to its 1 s precision
    r = recall(stub, "rc-delay", handle)
    assert r.status.code == d.Code.OK, r.status
    assert r.message_id == gone_msg.system_properties.message_id
    assert receive(stub, "rc-delay", 12) == [b"kept"]


def test_a_normal_message_has_no_recall_handle(stub):
    r = send(stub, _message("rc-normal", b"n", d.MessageType.NORMAL))
    assert r.status.code == d.Code.OK and r.entries[0].recall_handle == ""


def _handle(*fields) -> str:
    return base64.urlsafe_b64encode(" ".join(map(str, fields)).encode()).decode()


def test_bad_recall_handles(stub):
    future = int(time.time() * 1000) + 60_000
    r = recall(stub, "rc-delay", "not a handle!")
    assert r.status.code == d.Code.INTERNAL_SERVER_ERROR and "recall handle is invalid" in r.status.message
    r = recall(stub, "rc-delay", _handle("v2", "rc-delay", "broker-a", future, "ID"))
    assert r.status.code == d.Code.INTERNAL_SERVER_ERROR and "recall handle is invalid" in r.status.message
    expired = recall(stub, "rc-delay", _handle("v1", "rc-delay", "broker-a", int(time.time() * 1000) - 1000, "ID"))
    other_topic = recall(stub, "rc-delay", _handle("v1", "rc-fifo", "broker-a", future, "ID"))
    unknown = recall(stub, "rc-delay", _handle("v1", "rc-delay", "broker-a", future, "NO-SUCH-ID"))
    print("expired", expired.status, "other topic", other_topic.status, "unknown", unknown)
    assert expired.status.code == d.Code.INTERNAL_SERVER_ERROR and "timestamp invalid" in expired.status.message
    assert other_topic.status.code == d.Code.INTERNAL_SERVER_ERROR and "topic not match" in other_topic.status.message
    # A future handle that names no message is accepted, as the broker does (nothing to cancel).
    assert unknown.status.code == d.Code.OK and unknown.message_id == "NO-SUCH-ID"


def test_recall_on_a_topic_that_is_not_delay_typed(stub):
    r = recall(stub, "rc-normal", _handle("v1", "rc-normal", "broker-a", int(time.time() * 1000) + 60_000, "ID"))
    print(r.status)
    assert r.status.code == d.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE


@pytest.mark.parametrize("topic,kind,due,group,topic_type,msg_type", [
    ("rc-fifo", d.MessageType.NORMAL, None, "", "FIFO", "NORMAL"),
    ("rc-normal", d.MessageType.FIFO, None, "g1", "NORMAL", "FIFO"),
    ("rc-normal", d.MessageType.DELAY, 60_000, "", "NORMAL", "DELAY"),
    ("rc-delay", d.MessageType.NORMAL, None, "", "DELAY", "NORMAL"),
])
def test_a_send_of_another_type_than_the_topic_is_refused(stub, topic, kind, due, group, topic_type, msg_type):
    msg = _message(topic, b"x", kind, int(time.time() * 1000) + due if due else None, group)
    r = send(stub, msg)
    print(r.status)
    assert r.status.code == d.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert f"the expected type is {topic_type}, but actual type is {msg_type}" in r.status.message


def test_a_send_of_the_topic_type_is_accepted(stub):
    assert send(stub, _message("rc-fifo", b"f", d.MessageType.FIFO, group="g1")).status.code == d.Code.OK
    assert send(stub, _message("rc-normal", b"n", d.MessageType.NORMAL)).status.code == d.Code.OK


def test_auto_renew_keeps_a_slow_message_leased(gw, stub):
    """Leases of 10 s (the least): after 15 s the auto-renewed message is still in flight and its
    receipt still acknowledges; the other, received without auto_renew, came back."""
    renewing, plain = Consumer(stub, "rc-renew", d.ClientType.PUSH_CONSUMER), Consumer(stub, "rc-plain")
    try:
        for topic in ("rc-renew", "rc-plain"):
            assert send(stub, _message(topic, topic.encode(), d.MessageType.NORMAL)).status.code == d.Code.OK
        deadline = time.monotonic() + 10
        renewed, first = [], []
        while (not renewed or not first) and time.monotonic() < deadline:
            renewed = renewed or receive_once(renewing, invisible_s=10, auto_renew=True)
            first = first or receive_once(plain, invisible_s=10)
        assert [m.body for m in renewed] == [b"rc-renew"] and [m.body for m in first] == [b"rc-plain"]
        time.sleep(15)
        with grpc.insecure_channel(gw.endpoints) as channel:  # other consumers of the groups
            peer = sg.MessagingServiceStub(channel)
            others = [Consumer(peer, "rc-renew"), Consumer(peer, "rc-plain")]
            try:
                assert receive_once(others[0]) == []
                again = receive_once(others[1])
            finally:
                for c in others:
                    c.close()
        assert [m.body for m in again] == [b"rc-plain"] and again[0].system_properties.delivery_attempt == 2
        assert ack(renewing, renewed[0]).code == d.Code.OK
    finally:
        renewing.close()
        plain.close()
