"""A client that talks straight to a shard that does not own a queue (`--shards 2`, real
processes, raw requests) gets the protocol's redirect, never another queue's records: Kafka
Produce, Fetch and ListOffsets answer NOT_LEADER_OR_FOLLOWER naming the owner shard (KIP-951), and
a RocketMQ send or pull at the wrong shard's remoting port answers NO_PERMISSION ("refresh the
route"), which RocketMQ clients treat as "try another broker" (their fault avoidance). Nothing is
appended at the wrong shard."""
from __future__ import annotations

import os
import sys

from confluent_kafka.admin import AdminClient, NewTopic

from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting.message import decode
from sharded import Sharded
from test_shards import create_topic, sharded  # noqa: F401 (the module's own --shards 2)

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "remoting"))
from raw_kafka import KafkaRaw, batch  # noqa: E402
from test_server import pull_fields, send_fields  # noqa: E402
from wire import Peer  # noqa: E402

NOT_LEADER_OR_FOLLOWER = 6


def kafka_ports(gw: Sharded) -> dict[int, int]:
    """Broker (shard node id) -> its Kafka port, from Metadata."""
    brokers = AdminClient({"bootstrap.servers": gw.kafka_bootstrap}).list_topics(timeout=10).brokers
    return {b.id: b.port for b in brokers.values()}


def remoting_addrs(gw: Sharded, topic: str) -> dict[str, str]:
    """Broker name -> remoting address, from the bootstrap name server's route of `topic`."""
    route = Peer(gw.namesrv).json_call(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return {b["brokerName"]: b["brokerAddrs"]["0"] for b in route["brokerDatas"]}


def pulled(resp) -> list[bytes]:
    out, pos = [], 0
    while resp.code == ResponseCode.SUCCESS and pos < len(resp.body):
        m = decode(resp.body, pos)
        out.append(m.body)
        pos += m.size
    return out


def test_kafka_produce_and_fetch_at_the_wrong_shard_name_the_owner(sharded):
    leaders = create_topic(sharded, "wrong-k")  # 4 partitions over both shards
    ports = kafka_ports(sharded)
    assert set(ports) == {1, 2}
    partition, owner = 0, leaders[0]
    other = next(b for b in ports if b != owner)
    at_owner = KafkaRaw("127.0.0.1", ports[owner])
    at_other = KafkaRaw("127.0.0.1", ports[other])
    try:
        assert at_owner.produce("wrong-k", batch([b"owned"]), partition=partition)[0] == 0
        produced = at_other.call(0, 10, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "wrong-k", "partition_data": [{"index": partition, "records": batch([b"stray"])}]}]})
        p = produced["responses"][0]["partition_responses"][0]
        assert p["error_code"] == NOT_LEADER_OR_FOLLOWER and p["current_leader"]["leader_id"] == owner
        assert produced["node_endpoints"][0]["port"] == ports[owner]
        fetched = at_other.fetch("wrong-k", 0, partition)
        assert fetched["error_code"] == NOT_LEADER_OR_FOLLOWER and not fetched["records"]
        assert at_other.list_offsets_error("wrong-k", partition) == NOT_LEADER_OR_FOLLOWER
        # the owner holds exactly the one record produced there: the stray one was not appended anywhere
        assert [v for _, v in at_owner.fetched_values("wrong-k", partition)] == [b"owned"]
    finally:
        at_owner.close()
        at_other.close()


def test_rocketmq_send_and_pull_at_the_wrong_shard_are_refused(sharded):
    both = remoting_addrs(sharded, "wrong-k")  # led by both shards: every shard's remoting address
    assert len(both) == 2
    admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
    admin.create_topics([NewTopic("wrong-r", 1, 1)])["wrong-r"].result(20)
    owner_name, owner_addr = next(iter(remoting_addrs(sharded, "wrong-r").items()))
    other_addr = next(a for n, a in both.items() if n != owner_name)
    owner, other = Peer(owner_addr), Peer(other_addr)
    try:
        assert owner.call(RC.SEND_MESSAGE_V2, send_fields("wrong-r", 0), b"owned").code == ResponseCode.SUCCESS
        sent = other.call(RC.SEND_MESSAGE_V2, send_fields("wrong-r", 0), b"stray")
        assert sent.code == ResponseCode.NO_PERMISSION and "refresh the route" in sent.remark, (sent.code, sent.remark)
        pull = other.call(RC.PULL_MESSAGE, pull_fields("wrong-r", 0, 0, group="wrong-g"))
        assert pull.code == ResponseCode.NO_PERMISSION and pulled(pull) == [], (pull.code, pull.remark)
        # a queue id beyond what a shard leads of a topic it does lead: refused too, not wrapped onto another
        beyond = other.call(RC.PULL_MESSAGE, pull_fields("wrong-k", 2, 0, group="wrong-g"))
        assert beyond.code == ResponseCode.NO_PERMISSION, (beyond.code, beyond.remark)
        assert pulled(owner.call(RC.PULL_MESSAGE, pull_fields("wrong-r", 0, 0, group="wrong-g"))) == [b"owned"]
    finally:
        owner.close()
        other.close()


def test_describe_producers_at_the_wrong_shard_is_not_leader(sharded):
    """DescribeProducers (61) of a partition another shard leads: NOT_LEADER_OR_FOLLOWER, as Kafka
    answers off the leader; before, an empty success ("no active producers"), a wrong read."""
    leaders = create_topic(sharded, "wrong-p")
    ports = kafka_ports(sharded)
    owner = leaders[0]
    other = next(b for b in ports if b != owner)
    body = {"topics": [{"name": "wrong-p", "partition_indexes": [0]}]}
    for node, code in ((owner, 0), (other, NOT_LEADER_OR_FOLLOWER)):
        raw = KafkaRaw("127.0.0.1", ports[node])
        try:
            assert raw.call(61, 0, body)["topics"][0]["partitions"][0]["error_code"] == code, node
        finally:
            raw.close()


def test_each_shard_describes_its_own_broker_configs(sharded):
    """DescribeConfigs of a BROKER resource: each shard answers for its own node id (what a Kafka
    admin client sends to that broker) and refuses another's, as a Kafka broker; before, every
    shard took only broker 0, which no shard is, and refused its own id."""
    ports = kafka_ports(sharded)
    for node, port in ports.items():
        raw = KafkaRaw("127.0.0.1", port)
        try:
            for asked in ports:
                resp = raw.call(32, 1, {"resources": [{"resource_type": 4, "resource_name": str(asked),
                                                       "configuration_keys": ["broker.id"]}],
                                        "include_synonyms": False})["results"][0]
                if asked == node:
                    assert resp["error_code"] == 0, resp
                    assert {c["name"]: c["value"] for c in resp["configs"]} == {"broker.id": str(node)}
                else:
                    assert resp["error_code"] == 42, resp  # INVALID_REQUEST: "Unexpected broker id"
        finally:
            raw.close()
