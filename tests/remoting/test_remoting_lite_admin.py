"""RocketMQ 5.5's lite topic admin queries (gateway.remoting.lite_admin) over raw frames and through
mqadmin 5.5 (getLiteTopicInfo, getParentTopicInfo, getLiteClientInfo, getLiteGroupInfo,
getBrokerLiteInfo, triggerLiteDispatch), after lite messages were sent, subscribed, popped and partly
acknowledged over remoting; refusals with 5.5's codes and words. Run first against Apache RocketMQ
5.5.0 (REMOTING_TARGET=rocketmq, tests/remoting/lite_wire.py): the same answers, offsets counted per
lite topic (its n-th message is offset n) on both."""
from __future__ import annotations

import json
import re

import pytest

from codec.remoting import RequestCode as RC
from compat.jvm import run_admin_batch
from lite_wire import ack_fields, ctl, lite_target, pop, send

pytestmark = pytest.mark.timeout(600)


def call(p, code, fields):
    resp = p.call(code, fields)
    return resp.code, (json.loads(resp.body) if resp.code == 0 and resp.body else resp.remark)


@pytest.fixture(scope="module")
def admin(tmp_path_factory):
    """(raw answers by name, mqadmin outputs by command) once La has 3 messages (2 acknowledged, 1 in
    flight) and Lb 2 (in flight), both subscribed by client c1 of group LG."""
    work = tmp_path_factory.mktemp("liteadmin")
    with lite_target(work, ",+lite.topic.expiration=30") as (p, system):
        for name, body in [("La", "a0"), ("La", "a1"), ("Lb", "b0"), ("La", "a2"), ("Lb", "b1")]:
            send(p, name, body)
        assert ctl(p, "PARTIAL_ADD", ["La", "Lb"], "c1").code == 0
        resp, got = pop(p, "c1")
        assert sorted(m.body for m in got) == [b"a0", b"a1", b"a2", b"b0", b"b1"]
        for m in [m for m in got if m.properties["__LITE_TOPIC"] == "La"][:2]:
            assert p.call(RC.ACK_MESSAGE, ack_fields(resp, m, "La")).code == 0
        raw = {
            "topic": call(p, RC.GET_LITE_TOPIC_INFO, {"parentTopic": "LP", "liteTopic": "La"}),
            "topic_none": call(p, RC.GET_LITE_TOPIC_INFO, {"parentTopic": "LP", "liteTopic": "Lnone"}),
            "topic_no_parent": call(p, RC.GET_LITE_TOPIC_INFO, {"parentTopic": "NoSuch", "liteTopic": "La"}),
            "topic_not_lite": call(p, RC.GET_LITE_TOPIC_INFO, {"parentTopic": "NP", "liteTopic": "La"}),
            "parent": call(p, RC.GET_PARENT_TOPIC_INFO, {"topic": "LP"}),
            "parent_not_lite": call(p, RC.GET_PARENT_TOPIC_INFO, {"topic": "NP"}),
            "client": call(p, RC.GET_LITE_CLIENT_INFO, {"parentTopic": "LP", "group": "LG", "clientId": "c1",
                                                        "maxCount": 100}),
            "client_one": call(p, RC.GET_LITE_CLIENT_INFO, {"parentTopic": "LP", "group": "LG", "clientId": "c1",
                                                            "maxCount": 1}),
            "client_unknown": call(p, RC.GET_LITE_CLIENT_INFO, {"parentTopic": "LP", "group": "LG", "clientId": "zz",
                                                                "maxCount": 100}),
            "client_wrong_group": call(p, RC.GET_LITE_CLIENT_INFO, {"parentTopic": "LP", "group": "OG",
                                                                    "clientId": "c1", "maxCount": 100}),
            "group": call(p, RC.GET_LITE_GROUP_INFO, {"group": "LG", "liteTopic": "La", "topK": 10}),
            "group_all": call(p, RC.GET_LITE_GROUP_INFO, {"group": "LG", "liteTopic": "", "topK": 10}),
            "group_not_lite": call(p, RC.GET_LITE_GROUP_INFO, {"group": "OG", "topK": 10}),
            "broker": call(p, RC.GET_BROKER_LITE_INFO, {}),
            "trigger": call(p, RC.TRIGGER_LITE_DISPATCH, {"group": "LG", "clientId": "c1"}),
            "trigger_not_lite": call(p, RC.TRIGGER_LITE_DISPATCH, {"group": "OG"}),
        }
        n = ["-n", system.namesrv]
        commands = {"getLiteTopicInfo": ["-p", "LP", "-l", "La", "-s"], "getParentTopicInfo": ["-p", "LP"],
                    "getLiteClientInfo": ["-p", "LP", "-g", "LG", "-c", "c1", "-s"],
                    "getLiteGroupInfo": ["-p", "LP", "-g", "LG", "-l", "La"],
                    "getBrokerLiteInfo": ["-b", system.addr, "-d"], "triggerLiteDispatch": ["-p", "LP", "-g", "LG"]}
        shown = run_admin_batch([[[name, *n, *args] for name, args in commands.items()]], str(work / "mqadmin"),
                               tools="rocketmqtools55")
        yield raw, {name: r["output"] for name, r in zip(commands, shown)}


def test_lite_topic_info(admin):
    raw, shown = admin
    code, body = raw["topic"]
    assert code == 0 and body["topicOffset"]["lastUpdateTimestamp"] > 0
    assert ({k: v for k, v in body.items() if k != "topicOffset"}, body["topicOffset"]["maxOffset"]) == \
        ({"liteTopic": "La", "parentTopic": "LP", "shardingToBroker": True,
          "subscriber": [{"clientId": "c1", "group": "LG"}]}, 3)
    assert raw["topic_none"] == (0, {"liteTopic": "Lnone", "parentTopic": "LP", "shardingToBroker": True,
                                     "subscriber": [],
                                     "topicOffset": {"lastUpdateTimestamp": 0, "maxOffset": 0, "minOffset": 0}})
    assert raw["topic_no_parent"] == (17, "Topic [NoSuch] not exist.")
    assert raw["topic_not_lite"] == (29, "Topic [NP] type not match.")
    assert re.search(r"\s0\s+3\s+\S.*\strue\s+1\s", shown["getLiteTopicInfo"]), shown["getLiteTopicInfo"]


def test_parent_topic_info(admin):
    raw, shown = admin
    code, body = raw["parent"]
    assert (code, body["topic"], body["ttl"], body["liteTopicCount"], body["groups"]) == (0, "LP", 30, 2, ["LG"])
    assert raw["parent_not_lite"] == (29, "Topic [NP] type not match.")
    assert re.search(r"\s30\s+2\s+\d+\s+\[LG\]", shown["getParentTopicInfo"]), shown["getParentTopicInfo"]


def test_lite_client_info(admin):
    raw, shown = admin
    code, body = raw["client"]
    assert code == 0 and body["lastAccessTime"] > 0
    assert {k: v for k, v in body.items() if k != "lastAccessTime"} == \
        {"clientId": "c1", "group": "LG", "lastConsumeTime": 0, "liteTopicCount": 2, "parentTopic": "LP",
         "liteTopicSet": ["%LMQ%$LP$La", "%LMQ%$LP$Lb"]}
    assert (raw["client_one"][1]["liteTopicCount"], len(raw["client_one"][1]["liteTopicSet"])) == (2, 1)
    assert raw["client_unknown"] == (0, {"clientId": "zz", "group": "LG", "lastAccessTime": -1, "lastConsumeTime": 0,
                                         "liteTopicCount": -1, "parentTopic": "LP"})
    assert raw["client_wrong_group"] == (29, "Subscription [OG]-[LP] not match.")
    assert "%LMQ%$LP$La" in shown["getLiteClientInfo"] and re.search(r"\s2\s", shown["getLiteClientInfo"])


def test_lite_group_info(admin):
    raw, shown = admin
    code, body = raw["group"]
    assert code == 0 and body["earliestUnconsumedTimestamp"] > 0
    wrapper = body["liteTopicOffsetWrapper"]
    assert (body["totalLagCount"], wrapper["brokerOffset"], wrapper["consumerOffset"]) == (1, 3, 2)
    code, body = raw["group_all"]
    lags = [(x["liteTopic"], x["lagCount"]) for x in body["lagCountTopK"]]
    assert (code, body["totalLagCount"], lags) == (0, 3, [("Lb", 2), ("La", 1)])
    assert raw["group_not_lite"] == (29, "Group [OG] is not a LITE group.")
    assert re.search(r"\s3\s+2\s+1\s", shown["getLiteGroupInfo"]), shown["getLiteGroupInfo"]


def test_broker_lite_info_and_trigger(admin):
    raw, shown = admin
    code, body = raw["broker"]
    assert (code, body["topicMeta"], body["groupMeta"], body["liteSubscriptionCount"]) == \
        (0, {"LP": 30}, {"LP": ["LG"]}, 2)
    assert raw["trigger"][0] == 0
    assert raw["trigger_not_lite"] == (29, "Group [OG] is not a LITE group.")
    assert '"LP":["LG"]' in shown["getBrokerLiteInfo"], shown["getBrokerLiteInfo"]
    assert "dispatched" in shown["triggerLiteDispatch"], shown["triggerLiteDispatch"]
