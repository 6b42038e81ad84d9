"""Priority messages (RIP-80) over remoting: the repo's native Producer sends `_SYS_MSG_PRIORITY_`
0..3 (lowest first) to a topic with `message.type=PRIORITY` and 4 queues; each send is answered
with the priority's queue; the native POP SimpleConsumer then receives the highest priority first,
send order within a priority. The queue follows the message alone: one with the property sent to
queue 1 of a NORMAL topic lands in queue 3 all the same (as RocketMQ 5.5 does). Checked against RocketMQ 5.5 first: REMOTING_TARGET=rocketmq runs it on the real
broker (bench/brokers.py), where the same results came."""
from __future__ import annotations

import os

import pytest

from client import ConsumeFrom, Message, MessageQueue, Producer, SimpleConsumer
from compat.jvm import MQADMIN, run_tool
from gateway_process import GatewayProcess

pytestmark = pytest.mark.timeout(600)
REAL = os.environ.get("REMOTING_TARGET") == "rocketmq"
PRIORITY = "_SYS_MSG_PRIORITY_"


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory):
    work = tmp_path_factory.mktemp("pop-priority")
    if REAL:
        from bench.brokers import RocketMQBroker
        system = RocketMQBroker(str(work / "rocketmq")).start()
    else:
        system = GatewayProcess(str(work / "data")).start()
    try:
        for topic, kind in (("PrioT", "PRIORITY"), ("PrioNormalT", "NORMAL")):
            r = run_tool("rocketmqtools", MQADMIN, ["updateTopic", "-n", system.namesrv, "-c", "DefaultCluster",
                                                    "-t", topic, "-r", "4", "-w", "4", "-a", f"+message.type={kind}"],
                         str(work / "mqadmin"))
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        yield system.namesrv
    finally:
        system.stop()


def test_priority_picks_the_queue_and_the_pop_order(namesrv):
    with Producer("prio-producers", namesrv) as p:
        queues = [p.send(Message("PrioT", f"p{prio}-{n}".encode(), properties={PRIORITY: str(prio)})).queue.queue_id
                  for n in range(2) for prio in range(4)]
        normal = p.send(Message("PrioNormalT", b"n", properties={PRIORITY: "3"}),
                        queue=MessageQueue("PrioNormalT", "broker-a", 1))
    assert queues == [0, 1, 2, 3] * 2
    assert normal.queue.queue_id == 3
    with SimpleConsumer("prio-g", namesrv, consume_from=ConsumeFrom.FIRST_OFFSET,
                        subscriptions={"PrioT": "*"}, await_duration=2) as c:
        got = []
        for _ in range(10):
            got += c.receive(max_messages=32, invisible_duration=30)
            if len(got) >= 8:
                break
    assert [m.body.decode() for m in got] == [f"p{prio}-{n}" for prio in (3, 2, 1, 0) for n in range(2)]
