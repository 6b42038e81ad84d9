"""The stop 38 CI failure, reproduced (issue 28): one group, two gateways sharing a bucket, the Python
gRPC SDK. The POP owner is paused (SIGSTOP) past the lease's take-over time, so the other gateway
takes the lease; a consumer whose route was fetched before (it names the old owner) keeps receiving
there. Before: the old owner served those receives from its own pop state while the new owner
served the other consumer from its own: every message was received twice (attempt 1 both times),
as on CI. Now an old owner looks at the lease again before serving when its beats stalled
(`PopOwner.fresh`), and a gateway that knows another owner does not serve a gRPC receive of a
diskless queue from its own state (it sends it to the owner: gateway.diskless_pop_grpc): each
message is received once.
Long (~50 s: a 7 s pause, the SDK's 30 s route refresh): tests/long_tests.txt."""
from __future__ import annotations

import collections
import os
import signal
import sys
import time

import pytest

import waiting
from client import Admin
from test_diskless_delay import bucket_args
from test_diskless_grpc_pop_two_gateways import INVISIBLE_S, N, owner_changes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "grpc"))
from grpc_sdk import GrpcGateway, config, message  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import FilterExpression, Producer, SimpleConsumer  # noqa: E402

pytestmark = pytest.mark.timeout(180)
TOPIC, GROUP = "gdl-takeover", "gdl-takeover-g"


def _consumer(endpoints: str):
    c = SimpleConsumer(config(endpoints), GROUP, {TOPIC: FilterExpression("*")}, await_duration=1)
    c.startup()
    return c


def test_a_paused_pop_owner_replaced_meanwhile_does_not_serve_its_consumers_a_second_time(request, tmp_path):
    args, _keys = bucket_args(request)
    a = GrpcGateway(str(tmp_path / "a"), extra_args=args).start()  # the first one up takes the POP lease
    b, consumers = None, []
    try:
        with Admin(a.namesrv) as admin:
            admin.create_topic(TOPIC, queues=1, attributes={"diskless.enable": "true"})
        b = GrpcGateway(str(tmp_path / "b"), extra_args=args).start()
        with Admin(b.namesrv) as admin:
            assert waiting.until(lambda: TOPIC in admin.list_topics(), 20, 0.2)
        consumers.append(_consumer(a.endpoints))  # its route names a, the owner
        a.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(7)  # past the lease's 5 s take-over time: b owns POP now
            consumers.append(_consumer(b.endpoints))  # its route names b
        finally:
            a.proc.send_signal(signal.SIGCONT)
        p = Producer(config(b.endpoints), (TOPIC,))
        p.startup()
        try:
            for i in range(N):
                p.send(message(TOPIC, b"m%d" % i))
        finally:
            p.shutdown()
        got = collections.defaultdict(list)  # body -> [delivery attempt]
        deadline = time.monotonic() + 40  # past the SDK's 30 s route refresh
        while time.monotonic() < deadline and len(got) < N:
            for c in consumers:  # the two take turns
                for m in c.receive(4, INVISIBLE_S):
                    got[m.body].append(m.delivery_attempt)
                    c.ack(m)
        assert sorted(got) == sorted(b"m%d" % i for i in range(N))
        assert {body: attempts for body, attempts in got.items() if attempts != [1]} == {}, owner_changes(tmp_path)
    finally:
        for c in consumers:
            c.shutdown()
        if b is not None:
            b.stop()
        a.proc.send_signal(signal.SIGCONT)
        a.stop()
