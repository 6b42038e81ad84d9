"""Lite topic consumption over remoting (gateway.remoting.pop_lite), with raw frames as RocketMQ 5.5's
proxy sends them to its broker: LITE_SUBSCRIPTION_CTL sets a client's lite topics, POP_LITE_MESSAGE
hands out all waiting messages of each subscribed lite topic in order (with INNER_MULTI_DISPATCH and
INNER_MULTI_QUEUE_OFFSET, which the ack echoes with queueId 0, reviveQid 999 and liteTopic) and then
nothing more of that lite topic until they are acknowledged; refusals with 5.5's codes and words.
Run first against Apache RocketMQ 5.5.0 (REMOTING_TARGET=rocketmq: one broker with enableLmq and
enableMultiDispatch, as lite topics need) — same results, except that 5.5's offsets count each lite
topic's own messages (0, 1, 2) while the gateway's are the messages' offsets in their queue of the
parent (increasing, not by one), so offsets are only compared by order here."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from codec.remoting import RequestCode as RC
from gateway_process import GatewayProcess
from test_server import decode_all, send_fields
from wire import Peer

REAL = os.environ.get("REMOTING_TARGET") == "rocketmq"
TOPIC_FIELDS = {"readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": 0, "order": "false", "defaultTopic": "TBW102"}


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """(peer, address) of a fresh target with LITE topic LP, NORMAL topic NP, group LG bound to LP, group OG."""
    work = tmp_path_factory.mktemp("lite")
    if REAL:
        from bench.brokers import RocketMQBroker
        system = RocketMQBroker(str(work / "rocketmq"), heap="1g",
                                extra={"enableLmq": "true", "enableMultiDispatch": "true"}).start()
        addr = f"127.0.0.1:{system.broker_port}"
    else:
        system = GatewayProcess(str(work / "data")).start()
        addr = system.namesrv
    try:
        p = Peer(addr)
        assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "LP", **TOPIC_FIELDS, "attributes": "+message.type=LITE"}).code == 0
        assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "NP", **TOPIC_FIELDS}).code == 0
        for group in ({"groupName": "LG", "attributes": {"+lite.bind.topic": "LP"}}, {"groupName": "OG"}):
            assert p.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps(group).encode()).code == 0
        yield p, addr
        p.close()
    finally:
        system.stop()


def send(p: Peer, lite: str, body: str, qid: int = 0) -> None:
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("LP", qid, {"__LITE_TOPIC": lite}), body.encode())
    assert resp.code == 0, (resp.code, resp.remark)


def ctl(p: Peer, action: str, names, client: str, offset_option=None):
    entry = {"action": action, "clientId": client, "group": "LG", "topic": "LP", "liteTopicSet": names, "version": 0}
    if offset_option:
        entry["offsetOption"] = offset_option
    return p.call(RC.LITE_SUBSCRIPTION_CTL, {}, json.dumps({"subscriptionSet": [entry]}).encode())


def pop_fields(client: str, group: str = "LG", topic: str = "LP", n: int = 32, poll_ms: int = 0) -> dict:
    return {"clientId": client, "consumerGroup": group, "topic": topic, "maxMsgNum": n, "invisibleTime": 60000,
            "pollTime": poll_ms, "bornTime": int(time.time() * 1000), "attemptId": "a1"}


def pop(p: Peer, client: str, **kw):
    resp = p.call(RC.POP_LITE_MESSAGE, pop_fields(client, **kw))
    return resp, decode_all(resp.body) if resp.code == 0 else []


def ack_fields(resp, message, lite: str, group: str = "LG", qid: int = 0, revive_qid: int = 999, offset=None) -> dict:
    offset = message.properties["INNER_MULTI_QUEUE_OFFSET"] if offset is None else offset
    extra = f"0 {resp.ext_fields['popTime']} {resp.ext_fields['invisibleTime']} {revive_qid} 0 broker-a {qid} {offset}"
    return {"consumerGroup": group, "topic": "LP", "queueId": qid, "offset": offset, "extraInfo": extra, "liteTopic": lite}


def test_subscribed_lite_topic_popped_in_order_held_until_acked(target):
    p, _ = target
    for lite, body, qid in [("La", "a0", 0), ("La", "a1", 1), ("Lb", "b0", 2), ("La", "a2", 3), ("Lb", "b1", 0)]:
        send(p, lite, body, qid)
    assert ctl(p, "PARTIAL_ADD", ["La"], "c1").code == 0
    resp, got = pop(p, "c1")
    assert (resp.code, resp.remark) == (0, "FOUND")
    assert [m.body for m in got] == [b"a0", b"a1", b"a2"]
    assert {m.properties["INNER_MULTI_DISPATCH"] for m in got} == {"%LMQ%$LP$La"}
    offsets = [int(m.properties["INNER_MULTI_QUEUE_OFFSET"]) for m in got]
    assert offsets == sorted(set(offsets))
    assert (resp.ext_fields["reviveQid"], resp.ext_fields["orderCountInfo"]) == ("999", "0;0;0")
    held = p.call(RC.POP_LITE_MESSAGE, pop_fields("c1"))  # La is held until its messages are acknowledged
    assert (held.code, held.remark, held.ext_fields["orderCountInfo"]) == (210, "NO_MESSAGE_IN_QUEUE", "")
    for m in got:
        assert p.call(RC.ACK_MESSAGE, ack_fields(resp, m, "La")).code == 0
    assert p.call(RC.ACK_MESSAGE, ack_fields(resp, got[0], "La")).code == 0  # again: already settled
    send(p, "La", "a3")
    resp, got = pop(p, "c1")
    assert [m.body for m in got] == [b"a3"]
    changed = p.call(RC.CHANGE_MESSAGE_INVISIBLETIME, {**ack_fields(resp, got[0], "La"), "invisibleTime": 10000})
    assert (changed.code, changed.ext_fields["popTime"], changed.ext_fields["reviveQid"]) == \
        (0, resp.ext_fields["popTime"], "999")
    # a late subscription from the lite topic's first message; the other's stays held
    assert ctl(p, "PARTIAL_ADD", ["Lb"], "c1", {"type": "POLICY", "value": 1}).code == 0
    resp, got = pop(p, "c1")
    assert [m.body for m in got] == [b"b0", b"b1"]
    assert ctl(p, "COMPLETE_REMOVE", [], "c1").code == 0
    send(p, "Lb", "b2")
    assert pop(p, "c1")[0].code == 210  # no subscription left
    assert pop(p, "nobody")[0].code == 210


def test_long_poll_answers_when_a_subscribed_message_arrives(target):
    p, addr = target
    assert ctl(p, "PARTIAL_ADD", ["Lw"], "c2").code == 0
    empty = p.call(RC.POP_LITE_MESSAGE, pop_fields("c2", poll_ms=1000))
    assert (empty.code, empty.remark) == (210, "NO_MESSAGE_IN_QUEUE")
    sender = Peer(addr)
    try:
        later = threading.Timer(1.0, send, (sender, "Lw", "w0"))
        later.start()
        resp, got = pop(p, "c2", poll_ms=15000)
        later.join()
    finally:
        sender.close()
    assert [m.body for m in got] == [b"w0"]


def test_refusals_as_rocketmq_5_5(target):
    p, _ = target
    for body, want in [(b"", (604, "Request body is null.")),
                       (b'{"subscriptionSet": []}', (604, "LiteSubscriptionCtlRequestBody is empty."))]:
        resp = p.call(RC.LITE_SUBSCRIPTION_CTL, {}, body)
        assert (resp.code, resp.remark) == want
    assert p.call(RC.LITE_SUBSCRIPTION_CTL, {}, b"{").code == 1
    for kw, (code, remark) in [({"n": 33}, (29, "pop message's num is greater than 32")),
                               ({"topic": "NoSuchLP"}, (17, "topic [NoSuchLP] not exist, apply first please!")),
                               ({"topic": "NP"}, (29, "the topic [NP] message type not match")),
                               ({"group": "OG"}, (29, "subscription bind topic not match, OG")),
                               ({"group": "NewLiteGroup"}, (29, "subscription bind topic not match, NewLiteGroup"))]:
        resp = p.call(RC.POP_LITE_MESSAGE, pop_fields("c3", **kw))
        assert resp.code == code and remark in resp.remark, (kw, resp.code, resp.remark)
    send(p, "Lr", "r0")
    assert ctl(p, "PARTIAL_ADD", ["Lr"], "c3").code == 0
    resp, got = pop(p, "c3")
    assert [m.body for m in got] == [b"r0"]
    for kw, (code, remark) in [({"offset": 10**6}, (208, "ack offset illegal.")),
                               ({"group": "OG"}, (29, "group type or bind topic not match.")),
                               ({"qid": 1}, (29, "ack queue illegal.")),
                               ({"revive_qid": 3}, (29, "ack queue illegal."))]:
        resp_ack = p.call(RC.ACK_MESSAGE, ack_fields(resp, got[0], "Lr", **kw))
        assert (resp_ack.code, resp_ack.remark) == (code, remark), kw
    assert p.call(RC.ACK_MESSAGE, ack_fields(resp, got[0], "Lr")).code == 0
