"""POP over remoting against a real gateway process: the native SimpleConsumer, raw requests with
bad receipts, request modes, and kill -9 (acknowledged records stay finished, in-flight ones return)."""
from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from client import ConsumeFrom, Message, MQBrokerError, Producer, SimpleConsumer
from codec.remoting import RequestCode as RC, ResponseCode as R
from pop_receiving import receive_all
from remoting.wire import Peer


def produce(gateway, topic, n, tags=None):
    with Producer("pop-producers", gateway.namesrv) as p:
        for i in range(n):
            p.send(Message(topic, b"m%d" % i, tags=(tags[i % len(tags)] if tags else None)))


def consumer(group, namesrv, **kw):
    return SimpleConsumer(group, namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, **kw)


def committed(gateway, group, topic, qid):
    resp = Peer(gateway.namesrv).call(RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": qid})
    return int(resp.ext_fields["offset"]) if resp.code == 0 else None


def test_simple_consumer_receives_each_message_once_when_acked(gateway):
    produce(gateway, "PopT", 40)
    with consumer("pop-g", gateway.namesrv, subscriptions={"PopT": "*"}, await_duration=1) as c:
        got = receive_all(c, 40)
        assert sorted(m.body for m in got) == sorted(b"m%d" % i for i in range(40))
        assert all(m.reconsume_times == 0 and m.topic == "PopT" for m in got)
        for m in got:
            c.ack(m)
        assert c.receive(max_messages=32, invisible_duration=30) == []
        with pytest.raises(MQBrokerError) as err:  # duplicate ack
            c.ack(got[0])
        assert err.value.code == R.NO_MESSAGE
    queues = {(m.queue_id, m.queue_offset) for m in got}
    for qid in {q for q, _ in queues}:
        assert committed(gateway, "pop-g", "PopT", qid) == max(o for q, o in queues if q == qid) + 1


def test_unacked_messages_come_back_after_the_invisible_time(gateway):
    produce(gateway, "PopRedo", 5)
    with consumer("pop-redo", gateway.namesrv, subscriptions={"PopRedo": "*"}, await_duration=3) as c:
        first = receive_all(c, 5, invisible=1.0)
        assert len(first) == 5
        again = receive_all(c, 5, invisible=30.0)
        assert sorted(m.body for m in again) == sorted(m.body for m in first)
        assert all(m.reconsume_times == 1 for m in again)
        with pytest.raises(MQBrokerError):  # the first receipts expired
            c.ack(first[0])
        for m in again:
            c.ack(m)
        assert c.receive(max_messages=32, invisible_duration=30) == []


def test_change_invisible_duration_keeps_a_message_leased(gateway):
    produce(gateway, "PopChg", 1)
    with consumer("pop-chg", gateway.namesrv, subscriptions={"PopChg": "*"}, await_duration=1) as c:
        [m] = receive_all(c, 1, invisible=1.0)
        old_receipt = m.properties["POP_CK"]
        c.change_invisible_duration(m, 30)
        assert m.properties["POP_CK"] != old_receipt
        time.sleep(1.5)
        assert c.receive(max_messages=32, invisible_duration=30) == []  # still invisible
        c.ack(m)


def test_tag_filter_applies_to_pop(gateway):
    produce(gateway, "PopTags", 12, tags=["a", "b", "c"])
    with consumer("pop-tags", gateway.namesrv, subscriptions={"PopTags": "a || c"}, await_duration=1) as c:
        got = receive_all(c, 8)
        assert sorted(m.tags for m in got) == ["a"] * 4 + ["c"] * 4


def test_long_polling_pop_wakes_on_arrival(gateway):
    produce(gateway, "PopLong", 1)
    with consumer("pop-long", gateway.namesrv, subscriptions={"PopLong": "*"}, await_duration=15) as c:
        for m in receive_all(c, 1):
            c.ack(m)
        threading.Timer(0.5, produce, (gateway, "PopLong", 1)).start()
        got = c.receive(max_messages=4, invisible_duration=30)
        assert [m.body for m in got] == [b"m0"]


def pop(p, group, topic, invisible=30_000, n=32, **extra):
    return p.call(RC.POP_MESSAGE, {"consumerGroup": group, "topic": topic, "queueId": -1, "maxMsgNums": n,
                                   "invisibleTime": invisible, "pollTime": 0, "bornTime": 0, "initMode": 0, **extra})


def first_receipt(resp):
    from client.simple_consumer import _with_receipts
    return _with_receipts(resp, "PopBad", "broker-a")[0]


def test_bad_receipts_and_parameters_are_refused_and_change_nothing(gateway):
    produce(gateway, "PopBad", 1)
    p = Peer(gateway.namesrv)
    assert pop(p, "g", "PopBad", invisible=-1).code == R.INVALID_PARAMETER
    assert pop(p, "g", "PopBad", invisible=10 ** 12).code == R.INVALID_PARAMETER
    assert pop(p, "g", "PopBad", n=33).code == R.INVALID_PARAMETER
    assert pop(p, "g", "NoSuchTopic").code == R.TOPIC_NOT_EXIST
    assert pop(p, "g", "PopBad", queueId=999).code == R.INVALID_PARAMETER
    resp = pop(p, "g", "PopBad")
    assert resp.code == 0 and resp.ext_fields["restNum"] == "0"
    m = first_receipt(resp)
    receipt = m.properties["POP_CK"]
    good = {"consumerGroup": "g", "topic": "PopBad", "queueId": m.queue_id, "offset": m.queue_offset,
            "extraInfo": receipt}
    refused = [
        ({**good, "consumerGroup": "other"}, R.NO_MESSAGE),  # another group
        ({**good, "extraInfo": receipt.replace(receipt.split(" ")[1], "12345", 1)}, R.NO_MESSAGE),  # unknown
        ({**good, "offset": m.queue_offset + 5}, R.NO_MESSAGE),  # beyond the queue
        ({**good, "extraInfo": "not an extra info"}, R.SYSTEM_ERROR),
        ({**good, "extraInfo": "1 2 3"}, R.SYSTEM_ERROR),
        ({**good, "extraInfo": ""}, R.SYSTEM_ERROR),
        ({**good, "queueId": 999}, R.MESSAGE_ILLEGAL),
        ({**good, "topic": "NoSuchTopic"}, R.TOPIC_NOT_EXIST),
    ]
    for fields, code in refused:
        assert p.call(RC.ACK_MESSAGE, fields).code == code, fields
        assert p.call(RC.CHANGE_MESSAGE_INVISIBLETIME, {**fields, "invisibleTime": 1000}).code == code, fields
    for invisible in (-1, 10 ** 12, "x"):
        resp = p.call(RC.CHANGE_MESSAGE_INVISIBLETIME, {**good, "invisibleTime": invisible})
        assert resp.code in (R.INVALID_PARAMETER, R.SYSTEM_ERROR)
    for body in (b"{", b"[]", json.dumps({"acks": [{"c": "g", "t": "PopBad"}]}).encode(),
                 json.dumps({"acks": [{"c": "g", "t": "PopBad", "r": "0", "so": 0, "q": m.queue_id, "pt": 1,
                                       "b": "!!"}]}).encode()):
        assert p.call(RC.BATCH_ACK_MESSAGE, {}, body).code in (R.SYSTEM_ERROR, R.NO_MESSAGE)
    assert pop(p, "g", "PopBad").code == R.PULL_NOT_FOUND  # still leased
    assert p.call(RC.ACK_MESSAGE, good).code == 0  # the real receipt still works
    assert p.call(RC.ACK_MESSAGE, good).code == R.NO_MESSAGE  # once


def test_batch_ack(gateway):
    produce(gateway, "PopBatch", 4)
    p = Peer(gateway.namesrv)
    p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "PopBatch1", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6})
    produce(gateway, "PopBatch1", 4)
    resp = pop(p, "g", "PopBatch1")
    offsets = json.loads("[" + resp.ext_fields["msgOffsetInfo"].split(" ")[2] + "]")
    assert offsets == [0, 1, 2, 3]
    bits = base64.b64encode(bytes([0b1011])).decode()  # offsets 0, 1, 3
    ack = {"c": "g", "t": "PopBatch1", "r": "0", "so": 0, "q": 0, "rq": 0, "pt": int(resp.ext_fields["popTime"]),
           "it": 30000, "b": bits}
    assert p.call(RC.BATCH_ACK_MESSAGE, {}, json.dumps({"brokerName": "broker-a", "acks": [ack]}).encode()).code == 0
    assert committed(gateway, "g", "PopBatch1", 0) == 2


def test_request_mode_and_assignment(gateway):
    produce(gateway, "PopMode", 1)
    p = Peer(gateway.namesrv)
    query = json.dumps({"topic": "PopMode", "consumerGroup": "gm", "clientId": "c1", "strategyName": "AVG",
                        "messageModel": "CLUSTERING"}).encode()
    modes = {a["mode"] for a in p.json_call(RC.QUERY_ASSIGNMENT, {}, query)["messageQueueAssignments"]}
    assert modes == {"PULL"}
    body = json.dumps({"topic": "PopMode", "consumerGroup": "gm", "mode": "POP", "popShareQueueNum": 0}).encode()
    assert p.call(RC.SET_MESSAGE_REQUEST_MODE, {}, body).code == 0
    retry = json.dumps({"topic": "%RETRY%gm", "consumerGroup": "gm", "mode": "POP"}).encode()
    assert p.call(RC.SET_MESSAGE_REQUEST_MODE, {}, retry).code == R.NO_PERMISSION
    assert p.call(RC.SET_MESSAGE_REQUEST_MODE, {}, b"{").code == R.SYSTEM_ERROR
    gateway.restart()
    p = Peer(gateway.namesrv)
    assignments = p.json_call(RC.QUERY_ASSIGNMENT, {}, query)["messageQueueAssignments"]
    assert [(a["mode"], a["messageQueue"]["queueId"]) for a in assignments] == [("POP", -1)]


def test_kill9_keeps_acks_and_redelivers_in_flight(gateway):
    p = Peer(gateway.namesrv)
    p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "PopCrash", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6})
    produce(gateway, "PopCrash", 10)
    with consumer("pop-crash", gateway.namesrv, subscriptions={"PopCrash": "*"}, await_duration=1) as c:
        got = receive_all(c, 10, invisible=2.0)
        assert len(got) == 10
        acked = {m.body for m in got[:6]}
        for m in got[:6]:
            c.ack(m)
    gateway.kill9()
    gateway.start()
    with consumer("pop-crash", gateway.namesrv, subscriptions={"PopCrash": "*"}, await_duration=3) as c:
        again = receive_all(c, 4, invisible=30.0)
        assert sorted(m.body for m in again) == sorted(m.body for m in got[6:])
        assert not acked & {m.body for m in again}
        assert all(m.reconsume_times == 1 for m in again)
        for m in again:
            c.ack(m)
        assert c.receive(max_messages=32, invisible_duration=30) == []
    assert committed(gateway, "pop-crash", "PopCrash", 0) == 10


def test_peek_notification_and_polling_info(gateway):
    p = Peer(gateway.namesrv)
    p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "PopPeek", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6})
    notify = {"consumerGroup": "gp", "topic": "PopPeek", "queueId": -1, "pollTime": 0, "bornTime": 0}
    assert p.call(RC.NOTIFICATION, notify).ext_fields["hasMsg"] == "false"
    produce(gateway, "PopPeek", 3)
    assert p.call(RC.NOTIFICATION, notify).ext_fields["hasMsg"] == "true"
    peek = {"consumerGroup": "gp", "topic": "PopPeek", "queueId": 0, "maxMsgNums": 32}
    for _ in range(2):  # peeking leases nothing
        resp = p.call(RC.PEEK_MESSAGE, peek)
        assert resp.code == 0 and resp.ext_fields["restNum"] == "3"
    resp = pop(p, "gp", "PopPeek", n=3)
    assert resp.code == 0 and resp.ext_fields["msgOffsetInfo"] == "0 0 0,1,2"
    assert p.call(RC.NOTIFICATION, notify).ext_fields["hasMsg"] == "false"  # all three are leased
    info = {"consumerGroup": "gp", "topic": "PopPeek", "queueId": -1}
    assert p.call(RC.POLLING_INFO, {**info, "queueId": 0}).ext_fields["pollingNum"] == "0"
    waiting = Peer(gateway.namesrv)
    opaque = waiting.send(RC.POP_MESSAGE, {"consumerGroup": "gp", "topic": "PopPeek", "queueId": -1, "maxMsgNums": 1,
                                           "invisibleTime": 30000, "pollTime": 3000, "bornTime": 0})
    time.sleep(0.5)
    assert p.call(RC.POLLING_INFO, info).ext_fields["pollingNum"] == "1"
    resp = waiting.receive()
    assert resp.opaque == opaque and resp.code == R.POLLING_TIMEOUT and resp.ext_fields["restNum"] == "0"


def test_kafka_record_batches_are_popped_record_by_record(gateway):
    from kafka import KafkaProducer
    Peer(gateway.namesrv).call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "PopKafka", "readQueueNums": 1,
                                                            "writeQueueNums": 1, "perm": 6})
    kp = KafkaProducer(bootstrap_servers=gateway.kafka_bootstrap, linger_ms=200)
    for i in range(10):
        kp.send("PopKafka", b"k%d" % i, headers=[("TAGS", b"a" if i % 2 else b"b")])
    kp.flush()
    kp.close()
    with consumer("pop-kafka", gateway.namesrv, subscriptions={"PopKafka": "a"}, await_duration=1) as c:
        first = receive_all(c, 5, invisible=1.0)
        assert sorted(m.body for m in first) == [b"k1", b"k3", b"k5", b"k7", b"k9"]
        assert [m.queue_offset for m in first] == [1, 3, 5, 7, 9]
        again = receive_all(c, 5, invisible=30.0)
        assert sorted(m.body for m in again) == sorted(m.body for m in first)
        assert all(m.reconsume_times == 1 for m in again)
        for m in again:
            c.ack(m)
    assert committed(gateway, "pop-kafka", "PopKafka", 0) == 10


def test_pop_and_ack_in_sync_flush_mode(gateway_factory):
    g = gateway_factory(flush="sync")
    produce(g, "PopSync", 6)
    with consumer("pop-sync", g.namesrv, subscriptions={"PopSync": "*"}, await_duration=1) as c:
        got = receive_all(c, 6)
        assert len(got) == 6
        c.change_invisible_duration(got[0], 60)
        for m in got:
            c.ack(m)
        assert c.receive(max_messages=32, invisible_duration=30) == []
    g.kill9()
    g.start()
    with consumer("pop-sync", g.namesrv, subscriptions={"PopSync": "*"}, await_duration=1) as c:
        assert c.receive(max_messages=32, invisible_duration=30) == []


def test_sql92_filter_applies_to_pop(gateway):
    with Producer("pop-producers", gateway.namesrv) as p:
        for i in range(10):
            p.send(Message("PopSql", b"s%d" % i, properties={"n": str(i)}))
    c = consumer("pop-sql", gateway.namesrv, await_duration=1)
    c.subscribe("PopSql", "n >= 7", "SQL92")
    with c:
        assert sorted(m.body for m in receive_all(c, 3)) == [b"s7", b"s8", b"s9"]


POP_CODES = [RC.POP_MESSAGE, RC.ACK_MESSAGE, RC.BATCH_ACK_MESSAGE, RC.CHANGE_MESSAGE_INVISIBLETIME, RC.PEEK_MESSAGE,
             RC.NOTIFICATION, RC.POLLING_INFO, RC.QUERY_ASSIGNMENT, RC.SET_MESSAGE_REQUEST_MODE]
GARBAGE = [({}, b""), ({"consumerGroup": "g", "topic": "PopJunk", "queueId": "x", "maxMsgNums": "1e3",
                       "invisibleTime": "", "offset": "-1", "extraInfo": "0 0 0 0 9 b 0 0"}, b"\x00\xff"),
           ({"consumerGroup": "g", "topic": "PopJunk", "queueId": "-5", "maxMsgNums": "0", "invisibleTime": "1",
             "offset": "99999999999999999999", "pollTime": "-1", "bornTime": "1"}, b"[1, 2]"),
           ({}, b'{"topic": 5, "consumerGroup": null, "acks": [{"c": "g", "t": "PopJunk", "r": "7", "so": 0, "q": 0,'
                b' "pt": 1, "b": "AQ=="}]}')]


def test_garbage_requests_are_answered_and_the_connection_stays_open(gateway):
    produce(gateway, "PopJunk", 1)
    p = Peer(gateway.namesrv)
    for code in POP_CODES:
        for fields, body in GARBAGE:
            resp = p.call(code, fields, body)
            read_only = code in (RC.QUERY_ASSIGNMENT, RC.NOTIFICATION, RC.POLLING_INFO)  # a negative queueId: all
            assert resp.code != R.SUCCESS or read_only, (code, fields, body, resp.remark)
    assert pop(p, "g", "PopJunk").code == 0  # nothing was leased or acknowledged by the garbage
