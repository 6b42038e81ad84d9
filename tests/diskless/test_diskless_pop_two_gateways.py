"""One group POPs a diskless queue through two gateways sharing the bucket (RocketMQ's native
SimpleConsumer, remoting POP / ACK / CHANGE_INVISIBLETIME): every message is handed out once across
both consumers, and one left unacknowledged comes back once (reconsume count 1), whichever gateway
each consumer talks to: POP of a diskless queue is the bucket's POP owner's
(gateway.diskless_pop_owner); before, each gateway kept its own POP state and handed every message
out. REMOTING_TARGET=rocketmq runs the same on RocketMQ 5.5 (one broker) with a plain topic."""
from __future__ import annotations

import collections
import json
import time

import pytest

from client import ConsumeFrom, Message, Producer, SimpleConsumer
from test_diskless_delay import REAL, target  # noqa: F401  (the fixture)
from waiting import until

pytestmark = pytest.mark.timeout(300 if REAL else 90)
N, UNACKED = 12, {b"m0", b"m5"}
INVISIBLE_S = 4.0


def test_one_group_pops_a_diskless_queue_through_two_gateways_once(target):  # noqa: F811
    q = target.create("dl-pop2")
    with Producer("dl-pop2-p", target.namesrv) as p:
        for i in range(N):
            p.send(Message("dl-pop2", b"m%d" % i), queue=q)
    consumers = [SimpleConsumer("dl-pop2-g", namesrv, subscriptions={"dl-pop2": "*"}, await_duration=1,
                                consume_from=ConsumeFrom.FIRST_OFFSET)
                 for namesrv in (target.readers[0], target.readers[-1])]
    deliveries = collections.defaultdict(list)  # body -> [(consumer, reconsume count)]
    try:
        for c in consumers:
            c.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _done(deliveries):
            for i, c in enumerate(consumers):  # the two take turns, as two instances of an application
                for m in c.receive(max_messages=4, invisible_duration=INVISIBLE_S):
                    deliveries[m.body].append((i, m.reconsume_times))
                    if m.body not in UNACKED or m.reconsume_times > 0:
                        c.ack(m)
        for c in consumers:  # nothing more for anyone
            assert c.receive(max_messages=32, invisible_duration=INVISIBLE_S) == []
    finally:
        for c in consumers:
            c.shutdown()
    assert sorted(deliveries) == sorted(b"m%d" % i for i in range(N))
    twice = {body: [count for _c, count in got] for body, got in deliveries.items() if len(got) != 1}
    assert twice == {body: [0, 1] for body in UNACKED}
    assert {c for got in deliveries.values() for c, _n in got} == {0, 1}  # both consumers got messages


def _done(deliveries) -> bool:
    return len(deliveries) == N and all(len(deliveries[b]) >= 2 for b in UNACKED)


def _owner_and_other_with_three_messages(request, gateway_factory, topic: str):
    """Two gateways on the test's bucket, the first the POP owner, and m0..m2 in a diskless `topic`."""
    if REAL:
        pytest.skip("a fail-over of the gateways' POP owner; one RocketMQ broker has none")
    from test_diskless_delay import Target, bucket_args
    args, _keys = bucket_args(request)
    a = gateway_factory(extra_args=args, name="a")  # first: it takes the POP lease
    b = gateway_factory(extra_args=args, name="b")
    q = Target(a.namesrv, [a.namesrv, b.namesrv]).create(topic)
    with Producer(f"{topic}-p", a.namesrv) as p:
        for i in range(3):
            p.send(Message(topic, b"m%d" % i), queue=q)
    return a, b


def _receive_three(c, invisible_s: float) -> list:
    got = []
    for _ in range(10):
        got += c.receive(max_messages=32, invisible_duration=invisible_s)
        if len(got) >= 3:
            break
    return got


def test_pop_goes_on_through_the_other_gateway_when_the_owner_is_gone(request, gateway_factory):
    """The owner killed (kill -9): a POP through the other gateway is served there at once (its own
    pop state, at-least-once, as after a broker fail-over), and that gateway takes the lease."""
    a, b = _owner_and_other_with_three_messages(request, gateway_factory, "dl-pop3")
    a.kill9()
    with SimpleConsumer("dl-pop3-g", b.namesrv, subscriptions={"dl-pop3": "*"}, await_duration=1,
                        consume_from=ConsumeFrom.FIRST_OFFSET) as c:
        got = _receive_three(c, 30)
        assert sorted(m.body for m in got) == [b"m0", b"m1", b"m2"]
        for m in got:
            c.ack(m)
    assert "diskless POP owner" in b.log() and "unreachable" in b.log()


def _in_flight_published(request, topic: str, leases: int) -> bool:
    """Whether the POP owner's newest published in-flight state (gateway.diskless_pop_owner) holds `leases`
    leases of `topic`."""
    from objstore_fixtures import object_store_on
    store = object_store_on(request.getfixturevalue("seaweed_s3"), request.getfixturevalue("s3_bucket"), prefix="tier/")
    try:
        newest = max(i.key for i in store.list("diskless/pop-inflight/"))  # under the owner's lease term
        states = json.loads(store.get(newest))["states"]
    except Exception:  # not published yet
        return False
    finally:
        store.close()
    return sum(len(s["leases"]) for s in states if s["t"] == topic) == leases


def test_a_new_owner_keeps_what_was_in_flight_at_the_old_one(request, gateway_factory):
    """Three messages popped through the other gateway (so at the owner), one acked, then the owner
    killed (kill -9): the two in flight stay invisible at the gateway that takes over (before: handed
    out again at once, with the acked one), an old receipt acks one there, and the other comes back
    once, after its invisible time, with reconsume count 1."""
    a, b = _owner_and_other_with_three_messages(request, gateway_factory, "dl-pop4")
    with SimpleConsumer("dl-pop4-g", b.namesrv, subscriptions={"dl-pop4": "*"}, await_duration=1,
                        consume_from=ConsumeFrom.FIRST_OFFSET) as c:
        got = _receive_three(c, 12)
        by_body = {m.body: m for m in got}
        assert sorted(by_body) == [b"m0", b"m1", b"m2"]
        c.ack(by_body[b"m0"])
        until(lambda: _in_flight_published(request, "dl-pop4", 2), 10, 0.2)  # (the owner's next beat)
        a.kill9()
        assert c.receive(max_messages=32, invisible_duration=12) == []  # served by b: still in flight
        c.ack(by_body[b"m1"])  # the receipt a gave
        again, deadline = [], time.monotonic() + 40
        while time.monotonic() < deadline and not again:
            again = c.receive(max_messages=32, invisible_duration=30)
        assert [(m.body, m.reconsume_times) for m in again] == [(b"m2", 1)]
        c.ack(again[0])
        assert c.receive(max_messages=32, invisible_duration=30) == []
    assert "adopted 2 message(s)" in b.log()
