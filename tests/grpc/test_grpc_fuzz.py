"""The seeded fuzzer for the gRPC port (as tests/robustness/test_fuzz.py for the other ports):
valid HTTP/2 + gRPC conversations of every MessagingService call are mutated (bit flips, cuts,
repeats, random bytes) and sent; the gateway must stay up, log no traceback, and still serve the
real Python SDK afterwards. `make fuzz` runs it longer (FUZZ_FRAMES, FUZZ_SEED)."""
from __future__ import annotations

import os
import random

import pytest

from grpc_raw import conversation, exchange
from grpc_sdk import GrpcGateway, config, message, receive_all

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import FilterExpression, Producer, SimpleConsumer  # noqa: E402
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s  # noqa: E402

CASES = int(os.environ.get("FUZZ_FRAMES", "300")) // 2
SEED = int(os.environ.get("FUZZ_SEED", "18"))


def corpus() -> list[tuple[str, bytes]]:
    topic, group = d.Resource(name="fz"), d.Resource(name="fz-g")
    mq = d.MessageQueue(topic=topic, id=-1)
    msg = d.Message(topic=topic, body=b"body", user_properties={"a": "b"},
                    system_properties=d.SystemProperties(tag="t", keys=["k"], message_id="0100", message_group="g",
                                                         message_type=d.MessageType.FIFO))
    receive = s.ReceiveMessageRequest(group=group, message_queue=mq, batch_size=4)
    receive.invisible_duration.FromSeconds(30)
    settings = d.Settings(client_type=d.ClientType.PRODUCER, publishing=d.Publishing(topics=[topic]))
    return [
        ("QueryRoute", s.QueryRouteRequest(topic=topic).SerializeToString()),
        ("Heartbeat", s.HeartbeatRequest(group=group).SerializeToString()),
        ("SendMessage", s.SendMessageRequest(messages=[msg]).SerializeToString()),
        ("QueryAssignment", s.QueryAssignmentRequest(topic=topic, group=group).SerializeToString()),
        ("ReceiveMessage", receive.SerializeToString()),
        ("AckMessage", s.AckMessageRequest(group=group, topic=topic, entries=[
            s.AckMessageEntry(message_id="0100", receipt_handle="0 0 1 fz")]).SerializeToString()),
        ("ChangeInvisibleDuration", s.ChangeInvisibleDurationRequest(group=group, topic=topic,
                                                                     receipt_handle="0 0 1 fz").SerializeToString()),
        ("EndTransaction", s.EndTransactionRequest(topic=topic, transaction_id="0:0",
                                                   resolution=d.TransactionResolution.COMMIT).SerializeToString()),
        ("Telemetry", s.TelemetryCommand(settings=settings).SerializeToString()),
        ("PullMessage", s.PullMessageRequest(group=group, message_queue=d.MessageQueue(topic=topic, id=0),
                                             batch_size=4).SerializeToString()),
        ("GetOffset", s.GetOffsetRequest(group=group, message_queue=d.MessageQueue(topic=topic, id=0)).SerializeToString()),
        ("NotifyClientTermination", s.NotifyClientTerminationRequest(group=group).SerializeToString()),
    ]


def mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        i = rng.randrange(len(buf)) if buf else 0
        if op == 0 and buf:
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            del buf[i:i + rng.randint(1, 16)]
        elif op == 2:
            buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 3 and buf:
            j = rng.randrange(len(buf))
            buf[i:i] = buf[j:j + rng.randint(1, 64)]
        elif buf:
            buf[i] = rng.choice((0, 0xFF, 0x7F, 0x80))
    return bytes(buf)


def test_fuzzed_grpc_conversations_do_not_hurt_the_gateway(tmp_path):
    gw = GrpcGateway(str(tmp_path / "data"), ["--request-deadline-ms", "3000"]).start()
    try:
        rng = random.Random(SEED)
        cases = corpus()
        for n in range(CASES):
            method, payload = rng.choice(cases)
            if n % 2:  # the gRPC message mutated inside a valid HTTP/2 conversation
                data = conversation(method, [mutate(rng, payload)], timeout="2S")
            else:  # the HTTP/2 bytes mutated (after the preface, most of the time)
                raw, _ = conversation(method, [payload], timeout="2S")
                keep = 24 if rng.random() < 0.8 else 0
                data = raw[:keep] + mutate(rng, raw[keep:])
            exchange(gw.grpc_port, data, wait=0.3)
            assert gw.proc.poll() is None, f"case {n} ({method}) ended the gateway"
        p = Producer(config(gw.endpoints), ("fz-after",))
        p.startup()
        c = SimpleConsumer(config(gw.endpoints), "fz-after-g", {"fz-after": FilterExpression("*")}, await_duration=2)
        c.startup()
        try:
            p.send(message("fz-after", b"still here"))
            assert [m.body for m in receive_all(c, 1)] == [b"still here"]
        finally:
            c.shutdown()
            p.shutdown()
    finally:
        gw.stop()
    assert "Traceback" not in gw.log()
