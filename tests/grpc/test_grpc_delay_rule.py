"""The delay rule on the gRPC port and one deliver-time maximum for every protocol (docs/mapping.md
"Delay rule"): a delivery_timestamp further ahead than the maximum is refused ILLEGAL_DELIVERY_TIME
and nothing is stored; one in the past is stored at once; and --timer-max-delay-sec is the same
maximum for gRPC, remoting and Kafka. Raw apache.rocketmq.v2 stubs; with GRPC_TARGET=proxy the
first tests run against Apache RocketMQ 5.5's own proxy (whose own maxDelayTimeMills is 24 h)."""
from __future__ import annotations

import os
import time
import uuid

import pytest

from grpc_sdk import GrpcGateway, start_target

grpc = pytest.importorskip("grpc")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

pytestmark = pytest.mark.timeout(900)  # the module fixture may start a real proxy (GRPC_TARGET=proxy)
PROXY = os.environ.get("GRPC_TARGET") == "proxy"
TOPIC = "dr-grpc"
DAY_MS = 86_400_000
METADATA = (("x-mq-client-id", "delay-rule@1@0@" + uuid.uuid4().hex[:8]), ("x-mq-language", "PYTHON"),
            ("x-mq-protocol", "v2"), ("x-mq-client-version", "5.0.0"))


def _ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = start_target(str(tmp_path_factory.mktemp("grpc-delay-rule") / "data"), {TOPIC: "DELAY"})
    try:
        yield g
    finally:
        g.stop()


def _send(endpoints: str, topic: str, due_ms: int):
    sp = d.SystemProperties(message_id=uuid.uuid4().hex.upper(), body_encoding=d.Encoding.IDENTITY,
                            message_type=d.MessageType.DELAY, born_host="127.0.0.1")
    sp.born_timestamp.FromMilliseconds(_ms())
    sp.delivery_timestamp.FromMilliseconds(due_ms)
    msg = d.Message(topic=d.Resource(name=topic), system_properties=sp, body=b"b")
    with grpc.insecure_channel(endpoints) as channel:
        resp = sg.MessagingServiceStub(channel).SendMessage(s.SendMessageRequest(messages=[msg]), metadata=METADATA,
                                                            timeout=15)
    return resp.status


def _gateway_stored(g, topic: str) -> dict:
    from codec.remoting import RequestCode as RC
    from remoting.wire import Peer
    p = Peer(g.namesrv)
    try:
        def top(t, queues):
            return sum(int(p.call(RC.GET_MAX_OFFSET, {"topic": t, "queueId": q}).ext_fields.get("offset", 0))
                       for q in range(queues))
        return {"topic": top(topic, 8), "scheduled": top("SCHEDULE_TOPIC_XXXX", 19)}
    finally:
        p.close()


def test_delivery_timestamp_beyond_the_maximum_is_refused(gw):
    before = None if PROXY else _gateway_stored(gw, TOPIC)
    status = _send(gw.endpoints, TOPIC, _ms() + 10 * DAY_MS)
    assert status.code == d.Code.ILLEGAL_DELIVERY_TIME, status
    if not PROXY:
        assert _gateway_stored(gw, TOPIC) == before


def test_delivery_timestamp_in_the_past_is_sent_at_once(gw):
    before = None if PROXY else _gateway_stored(gw, TOPIC)
    assert _send(gw.endpoints, TOPIC, _ms() - 60_000).code == d.Code.OK
    if not PROXY:
        after = _gateway_stored(gw, TOPIC)
        assert (after["topic"], after["scheduled"]) == (before["topic"] + 1, before["scheduled"])


@pytest.mark.skipif(PROXY, reason="the proxy refuses beyond its own maxDelayTimeMills (24 h) before the broker")
def test_the_maximum_is_the_brokers_three_days(gw):
    before = _gateway_stored(gw, TOPIC)
    assert _send(gw.endpoints, TOPIC, _ms() + 2 * DAY_MS).code == d.Code.OK
    assert _gateway_stored(gw, TOPIC)["scheduled"] == before["scheduled"] + 1


@pytest.mark.skipif(PROXY, reason="a gateway setting")
def test_one_maximum_for_every_protocol(tmp_path):
    """--timer-max-delay-sec 3600: 2 h ahead is refused on gRPC, remoting and Kafka alike, 30 min passes."""
    from confluent_kafka import KafkaError, Producer

    from codec.remoting import RequestCode as RC, ResponseCode as R
    from codec.remoting.message import properties_to_string
    from remoting.wire import Peer

    g = GrpcGateway(str(tmp_path / "data"), ["--timer-max-delay-sec", "3600"]).start()
    peer = None
    try:
        peer = Peer(g.namesrv)
        kafka = Producer({"bootstrap.servers": g.kafka_bootstrap, "retries": 0})

        def remoting(due: int) -> int:
            fields = {"a": "pg", "b": "dr-one", "c": "TBW102", "d": "1", "e": "0", "f": "0", "g": str(_ms()),
                      "h": "0", "i": properties_to_string({"__STARTDELIVERTIME": str(due)}), "j": "0", "k": "false"}
            return peer.call(RC.SEND_MESSAGE_V2, fields, b"r").code

        def kafka_produce(due: int) -> int:
            reports = []
            kafka.produce("dr-one", b"k", partition=0, headers=[("__STARTDELIVERTIME", str(due).encode())],
                          on_delivery=lambda err, _msg: reports.append(err))
            assert kafka.flush(30) == 0
            return 0 if reports[0] is None else reports[0].code()

        far, near = _ms() + 2 * 3_600_000, _ms() + 1_800_000
        assert _send(g.endpoints, "dr-one", far).code == d.Code.ILLEGAL_DELIVERY_TIME
        assert remoting(far) == R.MESSAGE_ILLEGAL
        assert kafka_produce(far) == KafkaError.INVALID_RECORD
        assert _gateway_stored(g, "dr-one")["scheduled"] == 0
        assert _send(g.endpoints, "dr-one", near).code == d.Code.OK
        assert remoting(near) == 0
        assert kafka_produce(near) == 0
        # the Kafka record's produce offset stays a gap in the topic until it is due (docs/mapping.md,
        # "Produce offsets are exact"); gRPC and remoting sends take no offset there before delivery
        assert _gateway_stored(g, "dr-one") == {"topic": 1, "scheduled": 3}
    finally:
        if peer is not None:
            peer.close()
        g.stop()
