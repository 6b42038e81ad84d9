"""RocketMQ 5 gRPC and POP on diskless topics (docs/diskless.md, "Where each semantic's state lives"):
gRPC SendMessage writes through the WAL objects (a Kafka consumer reads the messages from the
bucket; delay and transactional messages: test_diskless_grpc_delay.py), gRPC ReceiveMessage and
remoting POP_MESSAGE read them (test_diskless_pop.py, test_diskless_grpc_pop.py) -- never a silent write to,
or empty read from, the local CommitLog."""
from __future__ import annotations

import os
import sys
import time
import uuid

import pytest

from acked_records import read_topic
from codec.remoting import RemotingCommand, RequestCode, ResponseCode
from test_diskless_kafka import FAST_WAL, create_topic

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "grpc"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from grpc_sdk import GrpcGateway  # noqa: E402
from raw_kafka import send_command  # noqa: E402

grpc = pytest.importorskip("grpc")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

METADATA = (("x-mq-client-id", "diskless@1@0@" + uuid.uuid4().hex[:8]), ("x-mq-language", "PYTHON"),
            ("x-mq-protocol", "v2"), ("x-mq-client-version", "5.0.0"))


def _message(topic: str, body: bytes, kind=d.MessageType.NORMAL, due_ms: int | None = None) -> d.Message:
    sp = d.SystemProperties(message_id=uuid.uuid4().hex.upper(), body_encoding=d.Encoding.IDENTITY,
                            message_type=kind, born_host="127.0.0.1", queue_id=0)
    sp.born_timestamp.FromMilliseconds(int(time.time() * 1000))
    if due_ms is not None:
        sp.delivery_timestamp.FromMilliseconds(due_ms)
    return d.Message(topic=d.Resource(name=topic), system_properties=sp, body=body)


def test_grpc_sends_go_through_the_wal_and_pops_read_them(seaweed_s3, s3_bucket, tmp_path):
    g = GrpcGateway(str(tmp_path / "data"), extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL).start()
    try:
        create_topic(g.kafka_bootstrap, "gdl", partitions=1)
        with grpc.insecure_channel(g.endpoints) as channel:
            stub = sg.MessagingServiceStub(channel)
            sent = stub.SendMessage(s.SendMessageRequest(messages=[_message("gdl", b"one"), _message("gdl", b"two")]),
                                    metadata=METADATA, timeout=15)
            assert sent.status.code == d.Code.OK, sent.status
            assert [e.offset for e in sent.entries] == [0, 1]
            req = s.ReceiveMessageRequest(group=d.Resource(name="gdl-g"), batch_size=1,
                                          message_queue=d.MessageQueue(topic=d.Resource(name="gdl"), id=-1))
            req.invisible_duration.FromSeconds(30)
            got = list(stub.ReceiveMessage(req, metadata=METADATA, timeout=10))
            assert got[0].status.code == d.Code.OK and got[1].message.body == b"one", got
        assert read_topic(g.kafka_bootstrap, "gdl") == [b"one", b"two"]  # from the bucket, via Kafka
        now = int(time.time() * 1000)
        pop = send_command(g.remoting_port, RemotingCommand(code=RequestCode.POP_MESSAGE, ext_fields={
            "consumerGroup": "gdl-pop", "topic": "gdl", "queueId": "0", "maxMsgNums": "4", "invisibleTime": "30000",
            "pollTime": "0", "bornTime": str(now), "initMode": "0"}))
        assert pop.code == ResponseCode.SUCCESS, (pop.code, pop.remark)  # another group: both messages
    finally:
        g.stop()
