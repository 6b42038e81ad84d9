"""Consumer group names RocketMQ refuses (issue 30): raw remoting requests naming a group with NUL or
control bytes, a dot, or over 120 characters get RocketMQ 5.5's answers (checked first against a
real RocketMQ 5.5 broker with these same frames) and store nothing; afterwards librdkafka's
AdminClient lists and describes the gateway's groups (it cut such names at the NUL and then refused
its own describe: "Duplicate groups not allowed")."""
from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient

from codec.remoting import RequestCode as RC, ResponseCode as R
from test_server import pull_fields, send_fields
from wire import Peer

BAD_GROUPS = ["nul\x00g", "ctl\x01\x1fg", "dot.g", "x" * 121]
NOT_EXIST = R.SUBSCRIPTION_GROUP_NOT_EXIST


def _heartbeat(group: str) -> bytes:
    sub = {"topic": "NamesR", "subString": "*", "classFilterMode": False, "tagsSet": [], "codeSet": [],
           "subVersion": 0, "expressionType": "TAG"}
    return json.dumps({"clientID": "probe@1", "producerDataSet": [], "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False, "subscriptionDataSet": [sub]}]}).encode()


@pytest.mark.parametrize("group", BAD_GROUPS)
def test_a_group_rocketmq_refuses_gets_its_answers_and_nothing_is_stored(gateway, group):
    p = Peer(gateway.namesrv)
    assert p.call(RC.SEND_MESSAGE_V2, send_fields("NamesR", 0), b"x").code == 0
    assert p.call(RC.HEART_BEAT, {}, _heartbeat(group)).code == R.SUCCESS  # answered, not registered
    resp = p.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
    assert resp.code != R.SUCCESS or json.loads(resp.body or b"{}").get("consumerIdList") in (None, [])
    resp = p.call(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": "NamesR", "queueId": 0, "commitOffset": 1})
    assert (resp.code, resp.remark) == (NOT_EXIST, f"Group {group} not exist!")
    resp = p.call(RC.PULL_MESSAGE, {**pull_fields("NamesR", 0, 0, group=group), "sysFlag": 0x4 | 0x1, "commitOffset": 1})
    assert resp.code == NOT_EXIST and resp.remark.startswith(f"subscription group [{group}] does not exist, \nSee ")
    resp = p.call(RC.POP_MESSAGE, {"consumerGroup": group, "topic": "NamesR", "queueId": -1, "maxMsgNums": 1,
                                   "invisibleTime": 30000, "pollTime": 0, "bornTime": 0, "initMode": 0})
    assert resp.code == NOT_EXIST and resp.remark.startswith(f"subscription group [{group}] does not exist, \nSee ")
    resp = p.call(RC.CONSUMER_SEND_MSG_BACK, {"group": group, "offset": 0, "delayLevel": 0, "originMsgId": "x",
                                              "originTopic": "NamesR", "maxReconsumeTimes": 16})
    assert resp.code == NOT_EXIST and resp.remark.startswith(f"subscription group not exist, {group} \nSee ")
    resp = p.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps({"groupName": group}).encode())
    assert resp.code == R.INVALID_PARAMETER and resp.remark.startswith(f"The specified group: {group}, ")
    assert p.json_call(RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)["subscriptionGroupTable"] == {}
    assert p.json_call(RC.GET_ALL_CONSUMER_OFFSET)["offsetTable"] == {}
    assert p.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": f"%RETRY%{group}"}).code == R.TOPIC_NOT_EXIST
    p.close()


def test_after_refused_names_kafka_admin_clients_list_and_describe_the_groups(gateway):
    p = Peer(gateway.namesrv)
    assert p.call(RC.SEND_MESSAGE_V2, send_fields("NamesR", 0), b"x").code == 0
    for group in BAD_GROUPS:
        p.call(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": "NamesR", "queueId": 0, "commitOffset": 1})
        p.call(RC.PULL_MESSAGE, {**pull_fields("NamesR", 0, 0, group=group), "sysFlag": 0x5, "commitOffset": 1})
    good = "good_group-1"
    assert p.call(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": good, "topic": "NamesR", "queueId": 0,
                                              "commitOffset": 1}).code == R.SUCCESS
    p.close()
    admin = AdminClient({"bootstrap.servers": gateway.kafka_bootstrap})
    listed = admin.list_consumer_groups(request_timeout=20).result()
    ids = [g.group_id for g in listed.valid]
    assert ids == [good] and not listed.errors
    described = {gid: f.result() for gid, f in admin.describe_consumer_groups(ids, request_timeout=20).items()}
    assert described[good].group_id == good
