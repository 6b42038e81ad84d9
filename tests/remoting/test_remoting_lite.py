"""Lite topic consumption over remoting (gateway.remoting.pop_lite), with raw frames as RocketMQ 5.5's
proxy sends them to its broker: LITE_SUBSCRIPTION_CTL sets a client's lite topics, POP_LITE_MESSAGE
hands out all waiting messages of each subscribed lite topic in order (with INNER_MULTI_DISPATCH and
INNER_MULTI_QUEUE_OFFSET, which the ack echoes with queueId 0, reviveQid 999 and liteTopic) and then
nothing more of that lite topic until they are acknowledged; refusals with 5.5's codes and words.
Run first against Apache RocketMQ 5.5.0 (REMOTING_TARGET=rocketmq, tests/remoting/lite_wire.py) —
same results, except that 5.5's offsets count each lite topic's own messages (0, 1, 2) while the
gateway's are the messages' offsets in their queue of the parent (increasing, not by one), so
offsets are only compared by order here."""
from __future__ import annotations

import threading

import pytest

from codec.remoting import RequestCode as RC
from lite_wire import ack_fields, ctl, lite_target, pop, pop_fields, send
from wire import Peer


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    with lite_target(tmp_path_factory.mktemp("lite")) as (p, system):
        yield p, system.addr


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


def test_subscription_quota(target):
    """Past maxLiteSubscriptionCount (100 000) lite subscriptions a PARTIAL_ADD is refused with
    LITE_SUBSCRIPTION_QUOTA_EXCEEDED (2018); removing some makes room again."""
    p, _ = target
    names = [f"q{i}" for i in range(100_000)]
    assert ctl(p, "PARTIAL_ADD", names, "cq").code == 0
    refused = ctl(p, "PARTIAL_ADD", ["one-more"], "cq2")
    assert refused.code == 2018 and "lite subscription quota exceeded" in refused.remark
    assert ctl(p, "COMPLETE_REMOVE", [], "cq").code == 0
    assert ctl(p, "PARTIAL_ADD", ["one-more"], "cq2").code == 0
