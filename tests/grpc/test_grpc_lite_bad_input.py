"""Bad input to lite topics and priority messages over raw gRPC (grpcio): illegal lite topic names
in SyncLiteSubscription, 2001 lite topics in one request (more than the quota of 2000 clients are
told: RocketMQ 5.5 takes it), a blank lite topic on a message, priorities out of range. Each gets
the answer Apache RocketMQ 5.5.0 (cluster-mode proxy, GRPC_TARGET=proxy) gave to the same request,
and the gateway stays up without a traceback."""
from __future__ import annotations

import os

import grpc
import pytest

from lite_target import start

from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

pytestmark = pytest.mark.timeout(600)
META = [("x-mq-client-id", "bad-lite-client"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2"),
        ("x-mq-client-version", "5.2.0")]


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("grpc-lite-bad"))
    target = start(workdir, {"bl-lite": "LITE", "bl-priority": "PRIORITY"}, {"bl-lite-g": "bl-lite"})
    channel = grpc.insecure_channel(target.endpoints)
    try:
        yield sg.MessagingServiceStub(channel)
    finally:
        channel.close()
        target.stop()
        if hasattr(target, "log"):
            assert "Traceback" not in target.log()


def sync(stub, names, action=d.LiteSubscriptionAction.PARTIAL_ADD):
    req = s.SyncLiteSubscriptionRequest(action=action, topic=d.Resource(name="bl-lite"),
                                        group=d.Resource(name="bl-lite-g"), lite_topic_set=names)
    return stub.SyncLiteSubscription(req, metadata=META, timeout=20).status


def send(stub, topic, **system):
    m = d.Message(topic=d.Resource(name=topic), body=b"x",
                  system_properties=d.SystemProperties(message_id=os.urandom(8).hex(), body_encoding=d.Encoding.IDENTITY,
                                                       **system))
    return stub.SendMessage(s.SendMessageRequest(messages=[m]), metadata=META, timeout=20)


def test_lite_subscription_names_and_quota(stub):
    answers = {"bad": sync(stub, ["bad name!"]), "long": sync(stub, ["x" * 65]),
               "quota": sync(stub, [f"q{i}" for i in range(2001)]), "fine": sync(stub, ["ok-1"])}
    assert (answers["bad"].code, answers["bad"].message) == (
        d.Code.ILLEGAL_LITE_TOPIC, "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)")
    assert (answers["long"].code, answers["long"].message) == (d.Code.ILLEGAL_LITE_TOPIC, "lite topic exceed the max size 64")
    assert answers["quota"].code == d.Code.OK and answers["fine"].code == d.Code.OK


def test_lite_and_priority_messages_out_of_range(stub):
    answers = {"empty_lite": send(stub, "bl-lite", message_type=d.MessageType.LITE, lite_topic=" "),
               "negative": send(stub, "bl-priority", message_type=d.MessageType.PRIORITY, priority=-1),
               "huge": send(stub, "bl-priority", message_type=d.MessageType.PRIORITY, priority=2**31 - 1)}
    assert (answers["empty_lite"].status.code, answers["empty_lite"].status.message) == (
        d.Code.ILLEGAL_LITE_TOPIC, "lite topic cannot be the char sequence of whitespace")
    negative = answers["negative"].status
    assert negative.code == d.Code.INTERNAL_SERVER_ERROR
    assert negative.message.startswith("The priority must be greater than or equal to 0.")
    assert answers["huge"].status.code == d.Code.OK  # stored in the topic's highest queue
