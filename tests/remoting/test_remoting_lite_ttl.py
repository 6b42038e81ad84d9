"""Lite topic expiry (RocketMQ 5.5's lite TTL; gateway.lite_expiry, semantics.lite.live_offsets): a
lite topic of a parent with lite.topic.expiration = 1 (minute) that has had no new message for that
long is forgotten: its messages are no longer the lite topic's (getLiteTopicInfo maxOffset 0, group
lag -1), its subscription is gone from the client's set and a new subscription from its first message
gets nothing old; its next message starts it anew. Run first against Apache RocketMQ 5.5.0
(REMOTING_TARGET=rocketmq, broker minLiteTTl and liteTtlCheckInterval 1 s; the gateway with the same
--lite-min-ttl-ms and --lite-ttl-check-interval-ms). Takes over a minute (the TTL's unit): in
tests/long_tests.txt; tests/semantics/test_lite_live.py is its quick sibling."""
from __future__ import annotations

import json
import time

import pytest

from codec.remoting import RequestCode as RC
from lite_wire import ack_fields, ctl, lite_target, pop, send

pytestmark = pytest.mark.timeout(600)


def info(p, code, fields):
    resp = p.call(code, fields)
    assert resp.code == 0, (resp.code, resp.remark)
    return json.loads(resp.body)


def test_silent_lite_topic_expires_and_starts_anew(tmp_path):
    with lite_target(tmp_path, ",+lite.topic.expiration=1",
                     broker_conf={"minLiteTTl": "1000", "liteTtlCheckInterval": "1000"},
                     gateway_args=["--lite-min-ttl-ms", "1000", "--lite-ttl-check-interval-ms", "1000"]) as (p, _):
        send(p, "Lx", "x0")
        send(p, "Lx", "x1")
        assert ctl(p, "PARTIAL_ADD", ["Lx"], "c1").code == 0
        resp, got = pop(p, "c1")
        assert [m.body for m in got] == [b"x0", b"x1"]
        for m in got:
            assert p.call(RC.ACK_MESSAGE, ack_fields(resp, m, "Lx")).code == 0
        topic = {"parentTopic": "LP", "liteTopic": "Lx"}
        client = {"parentTopic": "LP", "group": "LG", "clientId": "c1", "maxCount": 100}
        assert info(p, RC.GET_LITE_TOPIC_INFO, topic)["topicOffset"]["maxOffset"] == 2
        assert info(p, RC.GET_LITE_CLIENT_INFO, client)["liteTopicCount"] == 1
        deadline = time.monotonic() + 240
        while info(p, RC.GET_LITE_TOPIC_INFO, topic)["topicOffset"]["maxOffset"] != 0:
            assert time.monotonic() < deadline, "the lite topic never expired"
            time.sleep(2)
        time.sleep(3)  # a check interval or two: the subscription goes too
        assert info(p, RC.GET_LITE_CLIENT_INFO, client)["liteTopicCount"] == 0
        assert info(p, RC.GET_LITE_TOPIC_INFO, topic)["subscriber"] == []
        group = info(p, RC.GET_LITE_GROUP_INFO, {"group": "LG", "liteTopic": "Lx", "topK": 10})
        assert (group["totalLagCount"], group.get("liteTopicOffsetWrapper")) == (-1, None)
        assert ctl(p, "PARTIAL_ADD", ["Lx"], "c1", {"type": "POLICY", "value": 1}).code == 0
        assert pop(p, "c1")[0].code == 210  # nothing old comes back
        send(p, "Lx", "x2")
        resp, got = pop(p, "c1")
        assert [m.body for m in got] == [b"x2"]
        assert info(p, RC.GET_LITE_TOPIC_INFO, topic)["topicOffset"]["maxOffset"] == 1
