"""gRPC consumers whose route still names a diskless bucket's old POP owner after a take-over (issue
28): two gateways sharing the bucket, the Python gRPC SDK. The owner a is paused (SIGSTOP) past the
lease's take-over time, so b takes the lease and a's published in-flight state; the SDK keeps the
route it fetched from a (naming a) until its refresh (the Python SDK's: 10 s after its start, then
every 30 s).
- An ack sent to a after the take-over was applied to a's own pop state, so b handed the acked
  messages out again once their invisible time ran out. Now a sends it to b (as remoting acks are).
- A receive sent to a got nothing until the SDK's route refresh. Now a sends it to b and relays
  the messages (gateway.diskless_pop_grpc).
Long (~40 s each: a 7 s pause, an invisible time, the SDK's route refresh): tests/long_tests.txt."""
from __future__ import annotations

import os
import signal
import sys
import time

import pytest

import waiting
from client import Admin
from test_diskless_delay import bucket_args

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "grpc"))
from grpc_sdk import GrpcGateway, config, message  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import FilterExpression, Producer, SimpleConsumer  # noqa: E402

pytestmark = pytest.mark.timeout(180)
N, INVISIBLE_S, PAUSE_S = 4, 15, 7  # the pause: past the lease's 5 s take-over time


def _consumer(endpoints: str, topic: str):
    c = SimpleConsumer(config(endpoints), topic + "-g", {topic: FilterExpression("*")}, await_duration=1)
    c.startup()
    return c


def _send(endpoints: str, topic: str) -> None:
    p = Producer(config(endpoints), (topic,))
    p.startup()
    try:
        for i in range(N):
            p.send(message(topic, b"m%d" % i))
    finally:
        p.shutdown()


def _receive_all(c, seconds: float) -> list:
    got, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline and len(got) < N:
        got += c.receive(N, INVISIBLE_S)
    return got


class _TwoGateways:
    """a (the POP owner: up first) and b on one bucket, a diskless topic of one queue."""

    def __init__(self, request, tmp_path, topic: str) -> None:
        args, _keys = bucket_args(request)
        self.a = GrpcGateway(str(tmp_path / "a"), extra_args=args).start()
        self.b = None
        with Admin(self.a.namesrv) as admin:
            admin.create_topic(topic, queues=1, attributes={"diskless.enable": "true"})
        self.b = GrpcGateway(str(tmp_path / "b"), extra_args=args).start()
        with Admin(self.b.namesrv) as admin:
            assert waiting.until(lambda: topic in admin.list_topics(), 20, 0.2)

    def pause_a(self) -> None:
        self.a.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(PAUSE_S)  # b owns POP now
        finally:
            self.a.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.b is not None:
            self.b.stop()
        self.a.proc.send_signal(signal.SIGCONT)
        self.a.stop()


def test_an_ack_sent_to_the_old_owner_after_a_take_over_holds_at_the_new_one(request, tmp_path):
    topic = "gdl-oldack"
    gateways, consumers = _TwoGateways(request, tmp_path, topic), []
    try:
        _send(gateways.b.endpoints, topic)
        old = _consumer(gateways.a.endpoints, topic)  # its route names a, the owner
        consumers.append(old)
        got = _receive_all(old, 20)
        received_at = time.monotonic()
        assert sorted(m.body for m in got) == [b"m%d" % i for i in range(N)]
        time.sleep(1.5)  # a publishes its in-flight state at its next beat
        gateways.pause_a()
        for m in got:
            old.ack(m)  # through a, which no longer owns POP
        new = _consumer(gateways.b.endpoints, topic)
        consumers.append(new)
        again = []
        while time.monotonic() < received_at + INVISIBLE_S + 6:  # past the receipts' invisible time
            again += new.receive(N, INVISIBLE_S)
        assert [(m.body, m.delivery_attempt) for m in again] == []  # before: all N again, attempt 2
    finally:
        for c in consumers:
            c.shutdown()
        gateways.stop()


def test_a_receive_sent_to_the_old_owner_after_a_take_over_is_served_by_the_new_one(request, tmp_path):
    topic = "gdl-oldrecv"
    gateways, consumers = _TwoGateways(request, tmp_path, topic), []
    try:
        p = Producer(config(gateways.b.endpoints), (topic,))
        p.startup()  # before the consumer's route: its start takes seconds under load
        consumers.append(p)
        started = time.monotonic()
        old = _consumer(gateways.a.endpoints, topic)
        consumers.append(old)
        assert old.receive(N, INVISIBLE_S) == []  # its route names a, the owner
        time.sleep(max(0.0, started + 12 - time.monotonic()))  # past the SDK's first route refresh (10 s; then 30 s)
        gateways.pause_a()
        for i in range(N):
            p.send(message(topic, b"m%d" % i))
        got = _receive_all(old, started + 38 - time.monotonic())  # through a, before the SDK's next refresh (at 40 s)
        assert sorted((m.body, m.delivery_attempt) for m in got) == [(b"m%d" % i, 1) for i in range(N)]
        for m in got:
            old.ack(m)
        received_at = time.monotonic()
        new = _consumer(gateways.b.endpoints, topic)
        consumers.append(new)
        again = []
        while time.monotonic() < received_at + INVISIBLE_S + 3:  # the acks held at b, the owner
            for c in (old, new):
                again += c.receive(N, INVISIBLE_S)
        assert [(m.body, m.delivery_attempt) for m in again] == []
    finally:
        for c in consumers:
            c.shutdown()
        gateways.stop()
