"""One group receives a diskless topic through two gateways sharing the bucket with the stock
Python gRPC SDK (SimpleConsumer: ReceiveMessage / AckMessage = POP): every message is received once
across both consumers, and one left unacknowledged comes back once: the route of a diskless topic
names the bucket's POP owner (gateway.diskless_pop_owner), so both consumers' receives share its
pop state; before, each gateway handed every message out. If the gateways' logs show a real
take-over of the POP lease during the test (the owner's beats stalled 5 s under load: the stop 38
CI failure, reproduced in test_diskless_grpc_pop_takeover.py), only the documented contract is
asserted: at least once, never a message handed out fresh twice. GRPC_TARGET=proxy runs the same on
RocketMQ 5.5's proxy with a plain topic."""
from __future__ import annotations

import collections
import os
import sys
import time

import pytest

from test_diskless_grpc_delay import REAL, target  # noqa: F401  (the fixture)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "grpc"))
from grpc_sdk import config, message  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import FilterExpression, Producer, SimpleConsumer  # noqa: E402

pytestmark = pytest.mark.timeout(400 if REAL else 120)
N, UNACKED, INVISIBLE_S = 8, b"m3", 10  # 10 s: the least the SDK and the proxy accept


def owner_changes(tmp_path) -> list[str]:
    """Each gateway's log lines naming the bucket's POP owner (to tell a failure's cause)."""
    return [f"{log.name}: {line.strip()}" for log in sorted(tmp_path.rglob("gateway-*.log"))
            for line in log.read_text(errors="replace").splitlines() if "POP owner" in line]


def test_one_group_receives_a_diskless_topic_through_two_gateways_once(target, tmp_path):  # noqa: F811
    endpoints, _readers, _queues, receiver = target
    consumers = [SimpleConsumer(config(e), "gdl-normal-g", {"gdl-normal": FilterExpression("*")}, await_duration=1)
                 for e in (endpoints, receiver)]
    for c in consumers:
        c.startup()
    got = collections.defaultdict(list)  # body -> [delivery attempt]
    try:
        p = Producer(config(endpoints), ("gdl-normal",))
        p.startup()
        try:
            for i in range(N):
                p.send(message("gdl-normal", b"m%d" % i))
        finally:
            p.shutdown()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (len(got) == N and len(got[UNACKED]) >= 2):
            for c in consumers:  # the two take turns
                for m in c.receive(4, INVISIBLE_S):
                    got[m.body].append(m.delivery_attempt)
                    if m.body != UNACKED or m.delivery_attempt > 1:
                        c.ack(m)
        for c in consumers:
            assert c.receive(16, INVISIBLE_S) == []
    finally:
        for c in consumers:
            c.shutdown()
    assert sorted(got) == sorted(b"m%d" % i for i in range(N))
    changes = owner_changes(tmp_path)
    if sum("this gateway" in line for line in changes) > 1:  # a real take-over (the owner's beats stalled 5 s):
        # the documented contract there is at least once for what was in flight (an ack the old owner
        # took may come back at the new one), never one message handed out fresh by both
        assert all(attempts == list(range(1, len(attempts) + 1)) for attempts in got.values()), (got, changes)
        return
    assert {body: attempts for body, attempts in got.items() if len(attempts) != 1} == {UNACKED: [1, 2]}, changes
