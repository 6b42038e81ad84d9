"""LITE and PRIORITY topics under `--shards 2` behave as on one process (real processes, raw
remoting frames as RocketMQ 5.5's proxy sends them): a topic whose semantics span all its queues is
led whole by shard 0, the bootstrap ports' (gateway.cluster.ownership.led_whole), so its route
names one broker with every queue; a POP reads the priorities highest first across all of them, and
a lite topic's messages sent through that shard are popped there in send order. Spread over both
shards (as before), half the priority queues and most lite topics' queues were another shard's."""
from __future__ import annotations

import json
import os
import sys

from codec.remoting import RequestCode as RC
from test_shards import sharded  # noqa: F401 (the module's own --shards 2)

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "remoting"))
from lite_wire import TOPIC_FIELDS, ctl, pop, send  # noqa: E402
from test_server import decode_all, send_fields  # noqa: E402
from wire import Peer  # noqa: E402


def _create(p: Peer, topic: str, kind: str) -> None:
    fields = {"topic": topic, **TOPIC_FIELDS, "attributes": f"+message.type={kind}"}
    assert p.call(RC.UPDATE_AND_CREATE_TOPIC, fields).code == 0


def _queue_brokers(p: Peer, topic: str) -> dict[str, int]:
    """Broker name -> how many of `topic`'s queues it leads, from the route's QueueData."""
    route = p.json_call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return {q["brokerName"]: q["writeQueueNums"] for q in route["queueDatas"]}


def _group(p: Peer, group: str, attributes: dict | None = None) -> None:
    body = {"groupName": group, **({"attributes": attributes} if attributes else {})}
    assert p.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps(body).encode()).code == 0


def test_priority_topic_popped_highest_first_across_all_its_queues(sharded):
    p = Peer(sharded.namesrv)
    try:
        _create(p, "prio", "PRIORITY")
        _group(p, "prio-g")
        for round_ in range(2):
            for prio in range(4):
                sent = p.call(RC.SEND_MESSAGE_V2, send_fields("prio", 0, {"_SYS_MSG_PRIORITY_": str(prio)}),
                              f"p{prio}-{round_}".encode())
                assert sent.code == 0, (sent.code, sent.remark)
        got = []
        for _ in range(8):
            resp = p.call(RC.POP_MESSAGE, {"consumerGroup": "prio-g", "topic": "prio", "queueId": -1,
                                           "maxMsgNums": 32, "invisibleTime": 60000, "pollTime": 0,
                                           "bornTime": 0, "initMode": 0})
            if resp.code != 0:
                break
            got += [m.body.decode() for m in decode_all(resp.body)]
        assert got == ["p3-0", "p3-1", "p2-0", "p2-1", "p1-0", "p1-1", "p0-0", "p0-1"]
        assert _queue_brokers(p, "prio") == {"broker-1": 4}  # shard 0 (node 1): every queue
    finally:
        p.close()


def test_lite_topics_popped_in_order_through_the_shard_they_were_sent_to(sharded):
    p = Peer(sharded.namesrv)
    try:
        _create(p, "LP", "LITE")
        _group(p, "LG", {"+lite.bind.topic": "LP"})
        names = [f"L{i}" for i in range(8)]  # crc32 spreads them over all four queues of LP
        for i in range(3):
            for name in names:
                send(p, name, f"{name}-{i}", qid=i)
        assert ctl(p, "PARTIAL_ADD", names, "c1").code == 0
        resp, got = pop(p, "c1")
        assert resp.code == 0, (resp.code, resp.remark)
        by_topic: dict[str, list[str]] = {}
        for m in got:
            by_topic.setdefault(m.properties["__LITE_TOPIC"], []).append(m.body.decode())
        assert by_topic == {name: [f"{name}-{i}" for i in range(3)] for name in names}
        assert _queue_brokers(p, "LP") == {"broker-1": 4}
    finally:
        p.close()
