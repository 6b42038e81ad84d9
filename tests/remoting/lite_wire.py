"""Lite topics over raw remoting frames, for tests/remoting/test_remoting_lite*.py: a target (the
gateway, or with REMOTING_TARGET=rocketmq Apache RocketMQ 5.5.0: one broker with enableLmq and
enableMultiDispatch, as lite topics need) with LITE topic LP, NORMAL topic NP, group LG bound to LP
and plain group OG; and the frames RocketMQ 5.5's proxy sends its broker for a lite push consumer."""
from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager

from codec.remoting import RequestCode as RC
from gateway_process import GatewayProcess
from test_server import decode_all, send_fields
from wire import Peer

REAL = os.environ.get("REMOTING_TARGET") == "rocketmq"
TOPIC_FIELDS = {"readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": 0, "order": "false", "defaultTopic": "TBW102"}


@contextmanager
def lite_target(work, topic_attributes: str = "", broker_conf: dict | None = None, gateway_args=()):
    """(peer, system) of a fresh target; `topic_attributes` more attributes of LP ("+k=v,..."), with
    `broker_conf` more broker.conf entries of the reference, `gateway_args` more flags of the gateway."""
    if REAL:
        from bench.brokers import RocketMQBroker
        conf = {"enableLmq": "true", "enableMultiDispatch": "true", **(broker_conf or {})}
        system = RocketMQBroker(str(work / "rocketmq"), heap="1g", extra=conf).start()
        addr = f"127.0.0.1:{system.broker_port}"
    else:
        system = GatewayProcess(str(work / "data"), extra_args=list(gateway_args)).start()
        addr = system.namesrv
    system.addr = addr
    try:
        p = Peer(addr)
        attributes = "+message.type=LITE" + topic_attributes
        assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "LP", **TOPIC_FIELDS, "attributes": attributes}).code == 0
        assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "NP", **TOPIC_FIELDS}).code == 0
        for group in ({"groupName": "LG", "attributes": {"+lite.bind.topic": "LP"}}, {"groupName": "OG"}):
            assert p.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps(group).encode()).code == 0
        yield p, system
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
    return {"consumerGroup": group, "topic": "LP", "queueId": qid, "offset": offset, "extraInfo": extra,
            "liteTopic": lite}
