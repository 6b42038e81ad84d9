"""Client mistakes get the error answer a RocketMQ broker gives, store nothing, and leave the
connection usable (a real gateway process, raw frames)."""
import json

import pytest

from codec.remoting import RequestCode as RC, ResponseCode as R
from codec.remoting.bodies import BatchItem, encode_batch
from gateway_process import TEST_SHARDS
from test_server import pull_fields, send_fields
from wire import Peer

BAD_QUEUE_IDS = ["999999999999", "-2147483648", "-1", "12abc", " 5", "5_0", ""]


def offset_of(p, topic, qid):
    return int(p.call(RC.GET_MAX_OFFSET, {"topic": topic, "queueId": qid}).ext_fields["offset"])


def test_update_offset_without_group_is_refused_and_admin_views_still_work(gateway):
    p = Peer(gateway.namesrv)
    resp = p.call(RC.UPDATE_CONSUMER_OFFSET, {"topic": "NoGroupT", "queueId": 0, "commitOffset": 3})
    assert resp.code == R.SYSTEM_ERROR and "consumerGroup" in resp.remark
    for fields in ({"consumerGroup": "g", "queueId": 0, "commitOffset": 3},  # no topic
                   {"consumerGroup": "g", "topic": "NoGroupT", "commitOffset": 3},  # no queueId
                   {"consumerGroup": "g", "topic": "NoGroupT", "queueId": 0}):  # no commitOffset
        resp = p.call(RC.UPDATE_CONSUMER_OFFSET, fields)
        assert resp.code == R.SYSTEM_ERROR and resp.remark.startswith("the custom field <")
    groups = p.json_call(RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)["subscriptionGroupTable"]
    assert groups == {}
    assert p.json_call(RC.GET_ALL_CONSUMER_OFFSET)["offsetTable"] == {}
    assert p.json_call(RC.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "NoGroupT"})["groupList"] == []


def test_bad_queue_ids_are_refused_on_offset_and_pull_requests(gateway):
    p = Peer(gateway.namesrv)
    assert p.call(RC.SEND_MESSAGE_V2, send_fields("QidT", 0), b"x").code == 0
    for qid in BAD_QUEUE_IDS:
        _refused_everywhere(p, qid)
    assert p.json_call(RC.GET_ALL_CONSUMER_OFFSET)["offsetTable"] == {}  # nothing stored


def _refused_everywhere(p, qid):
    for code, fields in [
        (RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "QidT", "queueId": qid, "commitOffset": 1}),
        (RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "QidT", "queueId": qid}),
        (RC.GET_MAX_OFFSET, {"topic": "QidT", "queueId": qid}),
        (RC.GET_MIN_OFFSET, {"topic": "QidT", "queueId": qid}),
        (RC.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": "QidT", "queueId": qid, "timestamp": 0}),
        (RC.GET_EARLIEST_MSG_STORETIME, {"topic": "QidT", "queueId": qid}),
        (RC.PULL_MESSAGE, pull_fields("QidT", qid, 0)),
        (RC.LITE_PULL_MESSAGE, pull_fields("QidT", qid, 0)),
    ]:
        resp = p.call(code, fields)
        assert resp.code == R.SYSTEM_ERROR and "queueId" in resp.remark, (qid, code, resp.code, resp.remark)


@pytest.mark.skipif(TEST_SHARDS > 1, reason="one broker's refusal: in a cluster (shards) a send beyond the queues a "
                    "gateway leads goes to one it leads and a pull answers NO_PERMISSION (docs/cluster.md; "
                    "tests/shards/test_shards_wrong_shard.py)")
def test_queue_ids_beyond_the_topic_are_refused(gateway):
    p = Peer(gateway.namesrv)
    assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "TwoQ", "readQueueNums": 2, "writeQueueNums": 2,
                                               "perm": 6}).code == 0
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("TwoQ", 2), b"x")
    assert resp.code == R.SYSTEM_ERROR and "queueId[2] is illegal" in resp.remark
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("TwoQ", 0, e="999999999999"), b"x")
    assert resp.code == R.SYSTEM_ERROR and "<e>" in resp.remark
    resp = p.call(RC.PULL_MESSAGE, pull_fields("TwoQ", 2, 0))
    assert resp.code == R.SYSTEM_ERROR and "queueId[2] is illegal" in resp.remark
    assert offset_of(p, "TwoQ", 0) == offset_of(p, "TwoQ", 1) == 0
    # A negative queue id on a send means "any queue", as a broker picks one at random.
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("TwoQ", -2147483648), b"x")
    assert resp.code == 0 and resp.ext_fields["queueId"] in ("0", "1")
    assert offset_of(p, "TwoQ", 0) + offset_of(p, "TwoQ", 1) == 1


@pytest.mark.parametrize("code", [RC.SEND_MESSAGE_V2, RC.SEND_BATCH_MESSAGE])
def test_inner_batch_flag_from_a_client_is_refused(gateway, code):
    p = Peer(gateway.namesrv)
    body = encode_batch([BatchItem(0, b"a", "")]) if code == RC.SEND_BATCH_MESSAGE else b"not a kafka batch"
    resp = p.call(code, send_fields("FlagT", 0, f=str(0x80)), body)
    assert resp.code == R.MESSAGE_ILLEGAL and "0x80" in resp.remark
    assert offset_of(p, "FlagT", 0) == 0
    assert p.call(RC.SEND_MESSAGE_V2, send_fields("FlagT", 0), b"ok").code == 0


MALFORMED_HEARTBEATS = [
    b"[1, 2]", b"\xff\xfe", b'{"consumerDataSet": 5}', b'{"consumerDataSet": [1]}',
    b'{"clientID": "c", "consumerDataSet": [{"groupName": ["g"]}]}',
    b'{"clientID": "c", "consumerDataSet": [{"groupName": "g", "subscriptionDataSet": [{"topic": {}}]}]}',
    b'{"clientID": "c", "producerDataSet": [{"groupName": 7}]}',
    b'{"clientID": 12}',
    b"[" * 100_000,
]


def test_malformed_heartbeat_is_refused_and_registers_nothing(gateway):
    p = Peer(gateway.namesrv)
    for body in MALFORMED_HEARTBEATS:
        resp = p.call(RC.HEART_BEAT, {}, body)
        assert resp.code == R.SYSTEM_ERROR and "heartbeat" in resp.remark, body
    assert p.json_call(RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)["subscriptionGroupTable"] == {}


def test_heartbeat_subscription_with_non_string_expression_is_a_parse_failure(gateway):
    p = Peer(gateway.namesrv)
    data = {"clientID": "c", "consumerDataSet": [{"groupName": "g", "subscriptionDataSet": [
        {"topic": "T", "expressionType": 5, "subString": "*"}]}]}
    resp = p.call(RC.HEART_BEAT, {}, json.dumps(data).encode())
    assert resp.code == R.SUBSCRIPTION_PARSE_FAILED and "expressionType" in resp.remark


MALFORMED_LOCK_BODIES = [
    b"", b"[]", b'{"clientId": "c", "mqSet": []}', b'{"consumerGroup": "g", "clientId": "c", "mqSet": {}}',
    b'{"consumerGroup": "g", "clientId": "c", "mqSet": [{"topic": "T", "queueId": "x"}]}',
    b'{"consumerGroup": "g", "clientId": "c", "mqSet": [{"topic": "T", "queueId": -1}]}',
    b'{"consumerGroup": "g", "clientId": "c", "mqSet": [{"topic": ["T"], "queueId": 0}]}',
]


def test_malformed_lock_body_is_refused(gateway):
    p = Peer(gateway.namesrv)
    for code in (RC.LOCK_BATCH_MQ, RC.UNLOCK_BATCH_MQ):
        for body in MALFORMED_LOCK_BODIES:
            resp = p.call(code, {}, body)
            assert resp.code == R.SYSTEM_ERROR and "lock" in resp.remark, (code, body)
    assert p.call(RC.GET_BROKER_CLUSTER_INFO).code == 0


def test_non_numeric_fields_are_refused_with_the_field_name(gateway):
    p = Peer(gateway.namesrv)
    cases = [(RC.VIEW_MESSAGE_BY_ID, {"offset": "1e3"}, "offset"),
             (RC.QUERY_MESSAGE, {"topic": "T", "key": "k", "maxNum": "many"}, "maxNum"),
             (RC.END_TRANSACTION, {"commitOrRollback": "8", "tranStateTableOffset": "x", "commitLogOffset": "0"},
              "tranStateTableOffset"),
             (RC.CONSUMER_SEND_MSG_BACK, {"group": "g", "offset": str(2 ** 63)}, "offset"),
             (RC.UPDATE_AND_CREATE_TOPIC, {"topic": "T", "readQueueNums": "eight"}, "readQueueNums"),
             (RC.SEND_MESSAGE_V2, send_fields("NumT", 0, g="yesterday"), "<g>")]
    for code, fields, name in cases:
        resp = p.call(code, fields, b"x")
        assert resp.code == R.SYSTEM_ERROR and name in resp.remark, (code, resp.remark)
