"""POP (remoting POP_MESSAGE / ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME, the native SimpleConsumer)
on a diskless topic, through a gateway that did not write it (it reads the bucket): each message is
handed out once, an acknowledged one never comes back, one left unacknowledged comes back after its
invisible time with its reconsume count raised, one whose invisible time was extended stays away and
is acknowledged with its new receipt, a tag subscription gets only its tag. REMOTING_TARGET=rocketmq
runs the same on RocketMQ 5.5 with a plain topic."""
from __future__ import annotations

import pytest

from client import ConsumeFrom, Message, Producer, SimpleConsumer
from pop_receiving import receive_all
from test_diskless_delay import REAL, target  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(300 if REAL else 60)


def test_pop_ack_change_invisible_and_redelivery_on_a_diskless_topic(target):  # noqa: F811
    q = target.create("dl-pop")
    with Producer("dl-pop-p", target.namesrv) as p:
        for i in range(4):
            p.send(Message("dl-pop", b"m%d" % i, tags="a" if i % 2 == 0 else "b"), queue=q)
    reader = target.readers[-1]
    with SimpleConsumer("dl-pop-g", reader, subscriptions={"dl-pop": "*"}, await_duration=2,
                        consume_from=ConsumeFrom.FIRST_OFFSET) as c:
        first = {m.body: m for m in receive_all(c, 4, invisible=3.0)}
        assert sorted(first) == [b"m0", b"m1", b"m2", b"m3"]
        assert all(m.reconsume_times == 0 and m.topic == "dl-pop" for m in first.values())
        c.ack(first[b"m0"])
        c.ack(first[b"m1"])
        c.change_invisible_duration(first[b"m2"], 60)  # m2 stays away; m3 comes back after 3 s
        again = receive_all(c, 1, invisible=30.0)
        assert [(m.body, m.reconsume_times) for m in again] == [(b"m3", 1)]
        c.ack(again[0])
        c.ack(first[b"m2"])  # with the receipt the change gave it
        assert c.receive(max_messages=32, invisible_duration=30) == []
    with SimpleConsumer("dl-pop-tags", reader, subscriptions={"dl-pop": "b"}, await_duration=2,
                        consume_from=ConsumeFrom.FIRST_OFFSET) as c:
        got = receive_all(c, 2, invisible=30.0)
        assert sorted(m.body for m in got) == [b"m1", b"m3"]
