"""The remoting listener of a real gateway process, driven with raw frames (codec/remoting)."""
import json
import socket
import struct
import threading
import time

import pytest

from codec.remoting import JSON, ROCKETMQ, RemotingCommand, RequestCode as RC, ResponseCode as R, encode
from codec.remoting.bodies import BatchItem, encode_batch
from codec.remoting.message import decode, properties_to_string, tag_hash
from shard_aware import broker_names, one_queue_each
from wire import Peer


def send_fields(topic: str, qid: int = 0, props: dict | None = None, **extra) -> dict:
    fields = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": str(qid), "f": "0",
              "g": str(int(time.time() * 1000)), "h": "0", "i": properties_to_string(props or {}), "j": "0",
              "k": "false"}
    fields.update(extra)
    return fields


def decode_all(body: bytes):
    out, pos = [], 0
    while pos < len(body):
        m = decode(body, pos)
        out.append(m)
        pos += m.size
    return out


def pull_fields(topic, qid, offset, group="g1", sub="*", suspend=0, max_n=32):
    return {"consumerGroup": group, "topic": topic, "queueId": qid, "queueOffset": offset, "maxMsgNums": max_n,
            "sysFlag": 0x4 | (0x2 if suspend else 0), "commitOffset": 0, "suspendTimeoutMillis": suspend,
            "subscription": sub, "subVersion": 1, "expressionType": "TAG"}


@pytest.mark.parametrize("stype", [JSON, ROCKETMQ])
def test_route_for_topics_tbw102_and_retry(gateway, stype):
    p = Peer(gateway.namesrv, stype)
    for topic in ["RouteT", "TBW102", "%RETRY%grp"]:
        resp = p.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        assert resp.code == 0 and resp.is_response and resp.version >= 232
        route = json.loads(resp.body)  # standard JSON: quoted map keys
        brokers = {b["brokerName"]: b["brokerAddrs"] for b in route["brokerDatas"]}
        assert set(brokers) <= set(broker_names()) and brokers[broker_names()[0]] == {"0": gateway.namesrv}
        qd = route["queueDatas"][0]
        assert qd["perm"] & 6 == 6 and qd["readQueueNums"] >= 1
        if topic.startswith("%RETRY%"):
            assert qd["readQueueNums"] == qd["writeQueueNums"] == 1
    cluster = p.json_call(RC.GET_BROKER_CLUSTER_INFO)
    assert {k: sorted(v) for k, v in cluster["clusterAddrTable"].items()} == {"DefaultCluster": broker_names()}
    assert cluster["brokerAddrTable"][broker_names()[0]]["brokerAddrs"]["0"] == gateway.namesrv


def test_auto_create_disabled(gateway_factory):
    g = gateway_factory(extra_args=["--no-auto-create-topics"])
    p = Peer(g.namesrv)
    assert p.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}).code == R.TOPIC_NOT_EXIST
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("Nope"), b"x")
    assert resp.code == R.TOPIC_NOT_EXIST and resp.remark
    assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "Made", "readQueueNums": 2, "writeQueueNums": 2,
                                               "perm": 6}).code == 0
    queues = json.loads(p.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "Made"}).body)["queueDatas"]
    assert sum(q["readQueueNums"] for q in queues) == 2  # one broker's, or spread over the shards


def test_unknown_code_oneway_and_opaque(gateway):
    p = Peer(gateway.namesrv)
    resp = p.call(9999)
    assert resp.code == R.REQUEST_CODE_NOT_SUPPORTED and "9999" in resp.remark
    # Oneway requests are never answered, even unknown or failing ones: the next frame answers the probe.
    p.send(9999, oneway=True)
    p.send(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "OwT", "queueId": 0, "commitOffset": 7},
           oneway=True)
    probe = p.send(RC.GET_MAX_OFFSET, {"topic": "OwT", "queueId": 0})
    first = p.receive()
    assert first.opaque == probe
    assert p.call(RC.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "OwT", "queueId": 0}).ext_fields[
        "offset"] == "7"


@pytest.mark.parametrize("garbage", [
    b"\x00\x00\x00\x06\x05\x00\x00\x02{}",          # unknown serialize type
    b"\x00\x00\x00\x08\x00\x00\x00\x04nope",          # header is not JSON
    b"\x00\x00\x00\x05\x00\x00\x00\x09x",              # header length beyond the frame
    b"\x7f\xff\xff\xff",                                 # larger than the 16 MiB frame cap
    b"\x00\x00\x00\x0c\x01\x00\x00\x08\x00\x01\x00\x00\x00\x00\x00\x00",  # truncated binary header
])
def test_malformed_input_closes_that_connection_only(gateway, garbage):
    bystander = Peer(gateway.namesrv)
    bad = Peer(gateway.namesrv)
    bad.sock.sendall(garbage)
    assert bad.receive() is None  # closed by the server, no answer
    assert bystander.call(RC.GET_BROKER_CLUSTER_INFO).code == 0
    assert Peer(gateway.namesrv).call(RC.GET_BROKER_CLUSTER_INFO).code == 0


def test_missing_header_field_is_an_error_answer(gateway):
    p = Peer(gateway.namesrv)
    resp = p.call(RC.GET_MAX_OFFSET, {"topic": "T"})  # no queueId
    assert resp.code == R.SYSTEM_ERROR and "queueId" in resp.remark
    assert p.call(RC.GET_BROKER_CLUSTER_INFO).code == 0


@pytest.mark.parametrize("stype", [JSON, ROCKETMQ])
def test_send_pull_view_exact_bytes(gateway, stype):
    p = Peer(gateway.namesrv, stype)
    props = {"UNIQ_KEY": "ABC123", "WAIT": "true", "TAGS": "TagA", "KEYS": "k1 k2", "color": "red"}
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("SendT", 1, props), b"hello")
    assert resp.code == 0
    f = resp.ext_fields
    assert {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"} <= set(f)
    assert f["queueId"] == "1" and f["queueOffset"] == "0" and len(f["msgId"]) == 32
    # V1 header (code 10) with long names lands in the same queue.
    v1 = {"producerGroup": "pg", "topic": "SendT", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
          "queueId": "1", "sysFlag": "0", "bornTimestamp": "1", "flag": "5", "properties": "TAGS\x01TagB\x02"}
    assert p.call(RC.SEND_MESSAGE, v1, b"second").ext_fields["queueOffset"] == "1"
    pulled = p.call(RC.PULL_MESSAGE, pull_fields("SendT", 1, 0))
    assert pulled.code == 0
    assert {k: pulled.ext_fields[k] for k in ("suggestWhichBrokerId", "nextBeginOffset", "minOffset",
                                             "maxOffset")} == {"suggestWhichBrokerId": "0", "nextBeginOffset": "2",
                                                               "minOffset": "0", "maxOffset": "2"}
    msgs = decode_all(pulled.body)
    assert [m.body for m in msgs] == [b"hello", b"second"]
    assert [m.queue_offset for m in msgs] == [0, 1] and msgs[1].flag == 5
    assert msgs[0].properties["color"] == "red" and msgs[0].properties["KEYS"] == "k1 k2"
    view = p.call(RC.VIEW_MESSAGE_BY_ID, {"offset": msgs[0].physical_offset})
    assert view.code == 0 and view.body == msgs[0].raw  # pulled bytes are the stored entry
    host, port = gateway.namesrv.split(":")
    assert f["msgId"] == (socket.inet_aton(host) + struct.pack(">iq", int(port), msgs[0].physical_offset)).hex().upper()
    assert p.call(RC.VIEW_MESSAGE_BY_ID, {"offset": 10**12}).code == R.SYSTEM_ERROR
    q = p.call(RC.QUERY_MESSAGE, {"topic": "SendT", "key": "k2", "maxNum": 32, "beginTimestamp": 0,
                                  "endTimestamp": 2**63 - 1})
    assert q.code == 0 and [m.body for m in decode_all(q.body)] == [b"hello"]
    assert "indexLastUpdateTimestamp" in q.ext_fields and "indexLastUpdatePhyoffset" in q.ext_fields
    assert p.call(RC.QUERY_MESSAGE, {"topic": "SendT", "key": "none", "maxNum": 32, "beginTimestamp": 0,
                                     "endTimestamp": 2**63 - 1}).code == R.QUERY_NOT_FOUND


def test_batch_send_and_tag_filtered_pull(gateway):
    p = Peer(gateway.namesrv)
    items = [BatchItem(0, b"m%d" % i, properties_to_string({"TAGS": "A" if i % 2 else "B", "UNIQ_KEY": f"U{i}"}))
             for i in range(6)]
    resp = p.call(RC.SEND_BATCH_MESSAGE, send_fields("BatchT", 1, {"WAIT": "true"}, m="true"), encode_batch(items))
    assert resp.code == 0 and len(resp.ext_fields["msgId"].split(",")) == 6
    pulled = p.call(RC.PULL_MESSAGE, pull_fields("BatchT", 1, 0, sub="A"))
    msgs = decode_all(pulled.body)
    assert [m.body for m in msgs] == [b"m1", b"m3", b"m5"]
    assert all(m.properties["WAIT"] == "true" and m.properties["CLUSTER"] for m in msgs)
    assert pulled.ext_fields["nextBeginOffset"] == "6"
    # Offsets only hold B's units from 5 on: nothing matches → retry immediately, offset moves on.
    none = p.call(RC.PULL_MESSAGE, pull_fields("BatchT", 1, 4, sub="C || D"))
    assert none.code == R.PULL_RETRY_IMMEDIATELY and none.ext_fields["nextBeginOffset"] == "6"
    assert tag_hash("TagA") == 2598919


def test_tag_hash_collision_filtered_at_the_broker(gateway):
    """"Aa" and "BB" share a tag hashcode: the ConsumeQueue check passes both, the exact check at
    the broker drops "BB", so it never crosses the network to a consumer of "Aa"."""
    assert tag_hash("Aa") == tag_hash("BB")
    p = Peer(gateway.namesrv)
    for i, tag in enumerate(["Aa", "BB", "Aa", "BB"]):
        assert p.call(RC.SEND_MESSAGE_V2, send_fields("CollideT", 0, {"TAGS": tag}), b"m%d" % i).code == 0
    pulled = p.call(RC.PULL_MESSAGE, pull_fields("CollideT", 0, 0, sub="Aa"))
    assert [(m.body, m.properties["TAGS"]) for m in decode_all(pulled.body)] == [(b"m0", "Aa"), (b"m2", "Aa")]
    assert pulled.ext_fields["nextBeginOffset"] == "4"
    only_bb = p.call(RC.PULL_MESSAGE, pull_fields("CollideT", 0, 2, sub="Aa"))
    assert [m.body for m in decode_all(only_bb.body)] == [b"m2"]
    last = p.call(RC.PULL_MESSAGE, pull_fields("CollideT", 0, 3, sub="Aa"))
    assert last.code == R.PULL_RETRY_IMMEDIATELY and last.ext_fields["nextBeginOffset"] == "4"


def test_pull_status_codes_and_long_polling(gateway):
    p = Peer(gateway.namesrv)
    assert p.call(RC.PULL_MESSAGE, pull_fields("PollT", 0, 0)).code == R.TOPIC_NOT_EXIST
    assert p.call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "PollT"}).code == 0  # auto-created
    assert p.call(RC.PULL_MESSAGE, pull_fields("PollT", 0, 0)).code == R.PULL_NOT_FOUND
    assert p.call(RC.PULL_MESSAGE, pull_fields("PollT", 0, 5)).code == R.PULL_OFFSET_MOVED
    # A suspended pull that nothing wakes ends with PULL_NOT_FOUND.
    assert p.call(RC.PULL_MESSAGE, pull_fields("PollT", 0, 0, suspend=300)).code == R.PULL_NOT_FOUND
    # A suspended pull is answered by the arrival of a message (sent on another connection);
    # meanwhile the same connection keeps serving other requests.
    opaque = p.send(RC.PULL_MESSAGE, pull_fields("PollT", 0, 0, suspend=20000))
    assert p.call(RC.GET_MAX_OFFSET, {"topic": "PollT", "queueId": 0}).ext_fields["offset"] == "0"
    threading.Timer(0.3, lambda: Peer(gateway.namesrv).call(RC.SEND_MESSAGE_V2, send_fields("PollT", 0),
                                                            b"wake")).start()
    resp = p.receive()
    assert resp.opaque == opaque and resp.code == 0
    assert [m.body for m in decode_all(resp.body)] == [b"wake"]
    assert p.call(RC.PULL_MESSAGE, pull_fields("PollT", 0, 9)).ext_fields["nextBeginOffset"] == "1"


def test_offsets_min_max_search(gateway):
    p = Peer(gateway.namesrv)
    before = int(time.time() * 1000) - 1
    for i in range(3):
        p.call(RC.SEND_MESSAGE_V2, send_fields("OffT", 0), b"x")
    q = {"topic": "OffT", "queueId": 0}
    assert p.call(RC.GET_MAX_OFFSET, q).ext_fields["offset"] == "3"
    assert p.call(RC.GET_MIN_OFFSET, q).ext_fields["offset"] == "0"
    assert p.call(RC.SEARCH_OFFSET_BY_TIMESTAMP, {**q, "timestamp": before}).ext_fields["offset"] == "0"
    assert p.call(RC.SEARCH_OFFSET_BY_TIMESTAMP, {**q, "timestamp": 2**62}).ext_fields["offset"] == "3"
    assert int(p.call(RC.GET_EARLIEST_MSG_STORETIME, q).ext_fields["timestamp"]) >= before
    g = {"consumerGroup": "og", **q}
    assert p.call(RC.QUERY_CONSUMER_OFFSET, g).ext_fields["offset"] == "0"  # young store: from the start
    assert p.call(RC.QUERY_CONSUMER_OFFSET, {**g, "setZeroIfNotFound": "false"}).code == R.QUERY_NOT_FOUND
    assert p.call(RC.UPDATE_CONSUMER_OFFSET, {**g, "commitOffset": 2}).code == 0
    assert p.call(RC.QUERY_CONSUMER_OFFSET, g).ext_fields["offset"] == "2"
    # A pull with the commit flag commits too (the same table the Kafka side reads).
    p.call(RC.PULL_MESSAGE, {**pull_fields("OffT", 0, 2, group="og"), "sysFlag": 0x1 | 0x4, "commitOffset": 3})
    assert p.call(RC.QUERY_CONSUMER_OFFSET, g).ext_fields["offset"] == "3"


def heartbeat(client_id, group, topic="HbT", model="CLUSTERING"):
    return json.dumps({"clientID": client_id, "consumerDataSet": [{
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": "CONSUME_PASSIVELY", "groupName": group,
        "messageModel": model, "subscriptionDataSet": [{"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                                        "subString": "*", "subVersion": 1, "tagsSet": [], "topic": topic}],
        "unitMode": False}], "producerDataSet": [{"groupName": "pg"}]}).encode()


def test_heartbeat_consumer_list_locks_unregister(gateway):
    a, b = Peer(gateway.namesrv), Peer(gateway.namesrv, ROCKETMQ)
    ra = a.call(RC.HEART_BEAT, body=heartbeat("cA", "hg"))
    assert ra.code == 0 and ra.version >= 232
    assert a.json_call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hg"}) == {"consumerIdList": ["cA"]}
    assert b.call(RC.HEART_BEAT, body=heartbeat("cB", "hg")).code == 0
    # A joins first, so it is told that the membership changed (oneway NOTIFY_CONSUMER_IDS_CHANGED).
    note = a.receive()
    assert note.code == RC.NOTIFY_CONSUMER_IDS_CHANGED and note.is_oneway and not note.is_response
    assert a.json_call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hg"})["consumerIdList"] == ["cA", "cB"]
    mqs = [{"brokerName": broker_names()[0], "queueId": q, "topic": "HbT"} for q in range(2)]
    lock = lambda peer, cid, sets: peer.json_call(RC.LOCK_BATCH_MQ, body=json.dumps(
        {"clientId": cid, "consumerGroup": "hg", "mqSet": sets}).encode())["lockOKMQSet"]
    assert sorted(m["queueId"] for m in lock(a, "cA", mqs)) == [0, 1]
    assert lock(b, "cB", mqs) == []
    assert a.call(RC.UNLOCK_BATCH_MQ, body=json.dumps({"clientId": "cA", "consumerGroup": "hg",
                                                       "mqSet": mqs[:1]}).encode()).code == 0
    assert [m["queueId"] for m in lock(b, "cB", mqs)] == [0]
    conns = b.json_call(RC.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "hg"})
    assert sorted(c["clientId"] for c in conns["connectionSet"]) == ["cA", "cB"]
    assert conns["subscriptionTable"]["HbT"]["subString"] == "*"
    assert b.call(RC.UNREGISTER_CLIENT, {"clientID": "cB", "consumerGroup": "hg", "producerGroup": "pg"}).code == 0
    assert a.json_call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hg"})["consumerIdList"] == ["cA"]
    a.close()  # a closed connection drops its clients
    c = Peer(gateway.namesrv)
    deadline = time.time() + 10
    while c.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hg"}).code == 0 and time.time() < deadline:
        time.sleep(0.05)
    assert c.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hg"}).code == R.SYSTEM_ERROR


def test_oversized_message_is_illegal_and_not_stored(gateway):
    p = Peer(gateway.namesrv)
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("BigT", 0), b"x" * (4 * 1024 * 1024 + 1))
    assert resp.code == R.MESSAGE_ILLEGAL and resp.remark
    assert p.call(RC.GET_MAX_OFFSET, {"topic": "BigT", "queueId": 0}).ext_fields["offset"] == "0"
    assert p.call(RC.SEND_MESSAGE_V2, send_fields("BigT", 0), b"x" * (4 * 1024 * 1024)).code == 0
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("BigT", 0, {"big": "p" * 40000}), b"x")
    assert resp.code == R.MESSAGE_ILLEGAL
    # A batch of messages each under the limit but over it together is refused whole.
    items = [BatchItem(0, b"y" * (3 * 1024 * 1024), "") for _ in range(2)]
    resp = p.call(RC.SEND_BATCH_MESSAGE, send_fields("BigT", 0, m="true"), encode_batch(items))
    assert resp.code == R.MESSAGE_ILLEGAL
    assert p.call(RC.GET_MAX_OFFSET, {"topic": "BigT", "queueId": 0}).ext_fields["offset"] == "1"


def test_sync_flush_send(gateway_factory):
    g = gateway_factory(flush="sync")
    p = Peer(g.namesrv)
    resp = p.call(RC.SEND_MESSAGE_V2, send_fields("SyncT", 0), b"durable")
    assert resp.code == 0 and resp.ext_fields["queueOffset"] == "0"
    g.restart()
    p = Peer(g.namesrv)
    assert [m.body for m in decode_all(p.call(RC.PULL_MESSAGE, pull_fields("SyncT", 0, 0)).body)] == [b"durable"]


def test_admin_topic_calls(gateway):
    p = Peer(gateway.namesrv, ROCKETMQ)
    assert p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "AdmT", "readQueueNums": 4, "writeQueueNums": 4,
                                               "perm": 6, "topicFilterType": "SINGLE_TAG"}).code == 0
    assert "AdmT" in p.json_call(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)["topicList"]
    table = p.json_call(RC.GET_ALL_TOPIC_CONFIG)["topicConfigTable"]
    assert table["AdmT"]["readQueueNums"] == 4 and table["AdmT"]["perm"] == 6
    p.call(RC.SEND_MESSAGE_V2, send_fields("AdmT", 1), b"x")  # each shard of 2 leads 2 of the 4 queues
    stats = p.call(RC.GET_TOPIC_STATS_INFO, {"topic": "AdmT"})
    assert b'{"brokerName":"%s","queueId":1,"topic":"AdmT"}:{' % broker_names()[0].encode() in stats.body
    p.call(RC.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "ag", "topic": "AdmT", "queueId": 1, "commitOffset": 1})
    cs = p.call(RC.GET_CONSUME_STATS, {"consumerGroup": "ag"})
    assert cs.code == 0 and b'"brokerOffset":1,"consumerOffset":1' in cs.body
    assert p.call(RC.DELETE_TOPIC_IN_BROKER, {"topic": "AdmT"}).code == 0
    assert p.call(RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "AdmT"}).code == 0
    assert "AdmT" not in p.json_call(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)["topicList"]
    assert p.call(RC.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "x"}).code == R.QUERY_NOT_FOUND


def test_stored_entries_name_this_gateway_as_store_host(gateway):
    p = Peer(gateway.namesrv)
    p.call(RC.SEND_MESSAGE_V2, send_fields("HostT", 0), b"x")
    (m,) = decode_all(p.call(RC.PULL_MESSAGE, pull_fields("HostT", 0, 0)).body)
    host, port = gateway.namesrv.split(":")
    assert m.store_host == (host, int(port))


def test_pipelined_sends_in_one_write_each_get_their_answer(gateway):
    """Sends arriving in one read are appended together; an oversized one among them is refused
    alone, and a pull pipelined behind them sees every stored one (SQL92-filtered)."""
    p = Peer(gateway.namesrv)
    n = one_queue_each()  # one process: 1; under shards the bootstrap shard gets one too
    p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "PipeT", "readQueueNums": n, "writeQueueNums": n})
    frames, opaques = [], []
    for i in range(20):
        body = b"x" * (5 * 1024 * 1024) if i == 7 else b"m%d" % i
        cmd = RemotingCommand(code=RC.SEND_MESSAGE_V2, opaque=1000 + i, body=body,
                              ext_fields=send_fields("PipeT", 0, {"n": str(i)}))
        frames.append(encode(cmd))
        opaques.append(1000 + i)
    frames.append(encode(RemotingCommand(code=RC.PULL_MESSAGE, opaque=2000, ext_fields={
        **pull_fields("PipeT", 0, 0, sub="n >= 15"), "expressionType": "SQL92"})))
    p.sock.sendall(b"".join(frames))
    answers = {}
    while len(answers) < 21:
        resp = p.receive()
        assert resp is not None
        answers[resp.opaque] = resp
    offsets = sorted(int(answers[o].ext_fields["queueOffset"]) for o in opaques if o != 1007)
    assert offsets == list(range(19))
    assert answers[1007].code == R.MESSAGE_ILLEGAL
    pulled = answers[2000]
    assert pulled.code == R.SUCCESS
    assert [m.body for m in decode_all(pulled.body)] == [b"m%d" % i for i in range(15, 20)]
    assert pulled.ext_fields["nextBeginOffset"] == "19"


def test_malformed_sql92_refused_by_check_client_config_heartbeat_and_pull(gateway):
    p = Peer(gateway.namesrv)
    bad = {"topic": "SqlT", "subString": "a IN ()", "expressionType": "SQL92", "tagsSet": [], "codeSet": []}
    good = dict(bad, subString="a IN ('x')")
    resp = p.call(RC.CHECK_CLIENT_CONFIG, body=json.dumps({"clientId": "c1", "group": "sg",
                                                            "subscriptionData": bad}).encode())
    assert resp.code == R.SUBSCRIPTION_PARSE_FAILED and "a IN ()" in resp.remark
    resp = p.call(RC.CHECK_CLIENT_CONFIG, body=json.dumps({"clientId": "c1", "group": "sg",
                                                            "subscriptionData": good}).encode())
    assert resp.code == R.SUCCESS
    hb = {"clientID": "c1", "producerDataSet": [], "consumerDataSet": [{
        "groupName": "sg", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": [bad], "unitMode": False}]}
    resp = p.call(RC.HEART_BEAT, body=json.dumps(hb).encode())
    assert resp.code == R.SUBSCRIPTION_PARSE_FAILED and "position" in resp.remark
    assert p.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "sg"}).code != R.SUCCESS  # not registered
    hb["consumerDataSet"][0]["subscriptionDataSet"] = [good]
    assert p.call(RC.HEART_BEAT, body=json.dumps(hb).encode()).code == R.SUCCESS
    assert json.loads(p.call(RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "sg"}).body) == {"consumerIdList": ["c1"]}
    assert p.call(RC.GET_MAX_OFFSET, {"topic": "%RETRY%sg", "queueId": 0}).code == R.SUCCESS  # created
    n = one_queue_each()
    p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": "SqlT", "readQueueNums": n, "writeQueueNums": n})
    resp = p.call(RC.PULL_MESSAGE, {**pull_fields("SqlT", 0, 0, sub="a IN ()"), "expressionType": "SQL92"})
    assert resp.code == R.SUBSCRIPTION_PARSE_FAILED
