"""The RocketMQ request signature (codec.remoting.acl) and the remoting guard's decisions, without a
server: what each request code needs, and the answers a refused request gets."""
import base64
import hashlib
import hmac
import json

import pytest

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting import acl as sig
from security import Security
from security.acl import Operation as Op, ResourceType as RT
from security import rocketmq_perms as rp
from security.remoting_guard import ADMIN_ALTER_CODES, ADMIN_DESCRIBE_CODES, NAMESRV_CODES, needs


def _hmac(secret: str, content: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()


def test_signature_is_hmac_sha1_over_sorted_values_then_body():
    cmd = RemotingCommand(code=RC.SEND_MESSAGE_V2, ext_fields={"b": "orders", "a": "pg", "e": 3, "k": True},
                          body=b"payload")
    sig.sign(cmd, "AK", "SK")
    # Java's TreeMap order: "AccessKey" < "a" < "b" < "e" < "k" (upper case first); booleans as Java prints them
    assert cmd.ext_fields["Signature"] == _hmac("SK", b"AKpgorders3truepayload")
    assert cmd.ext_fields["AccessKey"] == "AK" and cmd.ext_fields["k"] == "true"
    assert sig.signature_matches(cmd, "SK") and not sig.signature_matches(cmd, "SK2")


def test_security_token_is_signed_and_a_resign_replaces_the_old_signature():
    cmd = RemotingCommand(code=RC.PULL_MESSAGE, ext_fields={"topic": "t"})
    sig.sign(cmd, "AK", "SK", security_token="tok")
    assert cmd.ext_fields["Signature"] == _hmac("SK", b"AKtokt")
    sig.sign(cmd, "AK", "SK", security_token="tok")
    assert cmd.ext_fields["Signature"] == _hmac("SK", b"AKtokt")


def test_any_change_breaks_the_signature():
    cmd = RemotingCommand(code=RC.SEND_MESSAGE, ext_fields={"topic": "t"}, body=b"x")
    sig.sign(cmd, "AK", "SK")
    for change in ({"topic": "u"}, {"extra": "1"}, {"AccessKey": "AK2"}):
        forged = RemotingCommand(code=cmd.code, ext_fields={**cmd.ext_fields, **change}, body=cmd.body)
        assert not sig.signature_matches(forged, "SK")
    assert not sig.signature_matches(RemotingCommand(code=cmd.code, ext_fields=cmd.ext_fields, body=b"y"), "SK")
    no_sig = {k: v for k, v in cmd.ext_fields.items() if k != "Signature"}
    assert not sig.signature_matches(RemotingCommand(code=cmd.code, ext_fields=no_sig), "SK")


def test_old_clients_leave_unique_key_query_out():
    fields = {"topic": "t", "_UNIQUE_KEY_QUERY": "true", "AccessKey": "AK"}
    old = RemotingCommand(code=RC.QUERY_MESSAGE, ext_fields={**fields, "Signature": _hmac("SK", b"AKt")}, version=399)
    assert sig.signature_matches(old, "SK")
    new = RemotingCommand(code=RC.QUERY_MESSAGE, ext_fields={**fields, "Signature": _hmac("SK", b"AKt")}, version=400)
    assert not sig.signature_matches(new, "SK")


# ---------------------------------------------------------------- what requests need
def test_every_handled_code_is_classified():
    from gateway.remoting.handlers import HANDLERS
    auth_only = set()
    for code in HANDLERS:
        if code in NAMESRV_CODES or code in ADMIN_ALTER_CODES or code in ADMIN_DESCRIBE_CODES:
            continue
        if code in (RC.HEART_BEAT, RC.UNREGISTER_CLIENT, RC.BATCH_ACK_MESSAGE, RC.LITE_SUBSCRIPTION_CTL):
            continue  # what they touch is in the body / optional
        req = RemotingCommand(code=code, ext_fields={"topic": "t", "b": "t", "consumerGroup": "g", "group": "g"},
                              body=b'{"consumerGroup":"g","mqSet":[]}')
        if not needs(req):
            auth_only.add(code)
    assert auth_only == set()


@pytest.mark.parametrize("code, fields, body, expected", [
    (RC.SEND_MESSAGE, {"topic": "t", "producerGroup": "pg"}, b"", [(Op.WRITE, RT.TOPIC, "t")]),
    (RC.SEND_MESSAGE_V2, {"b": "t", "a": "pg"}, b"", [(Op.WRITE, RT.TOPIC, "t")]),
    (RC.SEND_BATCH_MESSAGE, {"b": "%RETRY%cg", "a": "cg"}, b"", [(Op.READ, RT.GROUP, "cg")]),
    (RC.PULL_MESSAGE, {"topic": "t", "consumerGroup": "cg"}, b"",
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.PULL_MESSAGE, {"topic": "%RETRY%cg", "consumerGroup": "cg"}, b"",
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.GROUP, "cg")]),
    (RC.UPDATE_CONSUMER_OFFSET, {"topic": "t", "consumerGroup": "cg"}, b"",
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.QUERY_CONSUMER_OFFSET, {"topic": "t", "consumerGroup": "cg"}, b"",
     [(Op.DESCRIBE, RT.GROUP, "cg"), (Op.DESCRIBE, RT.TOPIC, "t")]),
    (RC.GET_MAX_OFFSET, {"topic": "t"}, b"", [(Op.DESCRIBE, RT.TOPIC, "t")]),
    (RC.CONSUMER_SEND_MSG_BACK, {"group": "cg"}, b"", [(Op.READ, RT.GROUP, "cg")]),
    (RC.HEART_BEAT, {}, json.dumps({"clientID": "c", "producerDataSet": [{"groupName": "pg"}],
                                    "consumerDataSet": [{"groupName": "cg", "subscriptionDataSet": [
                                        {"topic": "t"}, {"topic": "%RETRY%cg"}]}]}).encode(),
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.HEART_BEAT, {}, b'{"clientID":"c","producerDataSet":[{"groupName":"pg"}]}', []),
    (RC.LOCK_BATCH_MQ, {},
     b'{"consumerGroup":"cg","clientId":"c","mqSet":[{"topic":"t","brokerName":"b","queueId":0}]}',
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.POP_MESSAGE, {"topic": "t", "consumerGroup": "cg"}, b"",
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.ACK_MESSAGE, {"topic": "t", "consumerGroup": "cg"}, b"",
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.BATCH_ACK_MESSAGE, {}, b'{"acks":[{"c":"cg","t":"t","r":"0"}]}',
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.POP_LITE_MESSAGE, {"topic": "parent", "consumerGroup": "cg", "clientId": "c"}, b"",
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "parent")]),
    (RC.LITE_SUBSCRIPTION_CTL, {}, b'{"subscriptionSet":[{"clientId":"c","group":"cg","topic":"parent",'
     b'"liteTopicSet":["a"],"action":"PARTIAL_ADD"}]}', [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "parent")]),
    (RC.GET_LITE_TOPIC_INFO, {"parentTopic": "parent", "liteTopic": "a"}, b"",
     [(Op.DESCRIBE, RT.CLUSTER, "kafka-cluster")]),
    (RC.TRIGGER_LITE_DISPATCH, {}, b"", [(Op.ALTER, RT.CLUSTER, "kafka-cluster")]),
    (RC.QUERY_ASSIGNMENT, {}, b'{"topic":"t","consumerGroup":"cg"}',
     [(Op.READ, RT.GROUP, "cg"), (Op.READ, RT.TOPIC, "t")]),
    (RC.SET_MESSAGE_REQUEST_MODE, {}, b'{"topic":"t","consumerGroup":"cg"}',
     [(Op.ALTER, RT.CLUSTER, "kafka-cluster")]),
    (RC.UPDATE_AND_CREATE_TOPIC, {"topic": "t"}, b"", [(Op.ALTER, RT.CLUSTER, "kafka-cluster")]),
    (RC.RESEND_DLQ_MESSAGE, {"commitLogOffset": "0"}, b"", [(Op.ALTER, RT.CLUSTER, "kafka-cluster")]),
    (RC.GET_TOPIC_STATS_INFO, {"topic": "t"}, b"", [(Op.DESCRIBE, RT.CLUSTER, "kafka-cluster")]),
])
def test_needs(code, fields, body, expected):
    assert needs(RemotingCommand(code=code, ext_fields=fields, body=body)) == expected


# ---------------------------------------------------------------- the guard's answers
@pytest.fixture
def sec(tmp_path):
    s = Security(str(tmp_path / "config"), super_users=["User:root"], environ={})
    s.credentials.set_access_key("AK", "SK", user="alice")
    s.credentials.set_access_key("ROOT", "RS", user="root")
    rp.grant(s.authorizer, "alice", "topic", "orders", "PUB")
    rp.grant(s.authorizer, "alice", "topic", "closed", "DENY")
    return s


def _send(topic, ak=None, sk=None, code=RC.SEND_MESSAGE_V2):
    cmd = RemotingCommand(code=code, ext_fields={"a": "pg", "b": topic}, body=b"m")
    if ak is not None:
        sig.sign(cmd, ak, sk)
    return cmd


@pytest.mark.parametrize("ak, sk, topic, remark", [
    ("AK", "SK", "orders", None),
    ("AK", "SK", "other", "User:alice has no permission to access Topic:other from 1.2.3.4, no matched policies."),
    ("AK", "SK", "closed", "User:alice has no permission to access Topic:closed from 1.2.3.4, the decision is deny."),
    ("AK", "wrong", "orders", "check signature failed."),
    ("NOPE", "SK", "orders", "User:NOPE is not found."),
    (None, None, "orders", "username cannot be null."),
    ("ROOT", "RS", "anything", None),
])
def test_answers(sec, ak, sk, topic, remark):
    answer = sec.check_remoting(_send(topic, ak, sk), "1.2.3.4")
    if remark is None:
        assert answer is None
    else:
        assert answer.code == ResponseCode.NO_PERMISSION and answer.remark == remark


def test_name_server_requests_and_whitelisted_addresses_pass_unsigned(sec):
    route = RemotingCommand(code=RC.GET_ROUTEINFO_BY_TOPIC, ext_fields={"topic": "x"})
    assert sec.check_remoting(route, "9.9.9.9") is None
    rp.set_whitelist(sec.authorizer, ["10.0.0.*"])
    assert sec.check_remoting(_send("other"), "10.0.0.7") is None
    assert sec.check_remoting(_send("other"), "10.0.1.7").remark == "username cannot be null."


def test_admin_operations_need_the_cluster(sec):
    create = RemotingCommand(code=RC.UPDATE_AND_CREATE_TOPIC, ext_fields={"topic": "new"})
    sig.sign(create, "AK", "SK")
    assert sec.check_remoting(create, "h").remark.endswith("Cluster:kafka-cluster from h, no matched policies.")
    rp.set_admin(sec.authorizer, "alice")
    assert sec.check_remoting(create, "h") is None


def test_unreadable_body_is_refused(sec):
    beat = RemotingCommand(code=RC.HEART_BEAT, body=b'{"consumerDataSet": 5}')
    sig.sign(beat, "AK", "SK")
    assert sec.check_remoting(beat, "h").remark == "parse authorization context error."


def test_failures_are_rate_limited_per_address(sec):
    for _ in range(20):
        assert sec.check_remoting(_send("orders", "AK", "bad"), "6.6.6.6").remark == "check signature failed."
    blocked = sec.check_remoting(_send("orders", "AK", "SK"), "6.6.6.6")  # even right credentials, for now
    assert blocked.code == ResponseCode.NO_PERMISSION and "too many authentication failures" in blocked.remark
    assert sec.check_remoting(_send("orders", "AK", "SK"), "7.7.7.7") is None


def test_bootstrap_admin_from_the_environment(tmp_path):
    s = Security(str(tmp_path / "c"), super_users=["User:admin"], environ={"ROCKETGATE_ADMIN_PASSWORD": "pw"})
    assert s.check_remoting(_send("x", "admin", "pw"), "h") is None
    assert s.credentials.verify_plain("admin", "pw")
