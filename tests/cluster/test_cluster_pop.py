"""RocketMQ 5 POP over three gateways: each gateway answers as its own broker (broker-<node id>, its
BrokerData name in routes) in GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG (not checked here: a text body) and QUERY_ASSIGNMENT, and
a POP of all queues (queueId -1) at a broker reads only the queues it leads, under the broker-local
queue ids the route gives; so the native client's receipts (ExtraInfo: brokerName, queueId) ack at
the right broker and nothing acknowledged comes back."""
from __future__ import annotations

import collections
import json
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from client import ConsumeFrom, Message, Producer, SimpleConsumer
from clusters import NODES, require_etcd, start_cluster
from raw_kafka import remoting_call
from test_cluster_clients import led_by, wait_for

TOPIC = "popped"


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    require_etcd()
    cluster = start_cluster(tmp_path_factory.mktemp("pop-cluster"), NODES)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=6, replication_factor=2)])[TOPIC].result(10)
        wait_for(lambda: sorted(led_by(cluster.gateways, TOPIC)) == list(NODES), 20, what="every gateway leading queues")
        yield cluster.gateways
    finally:
        cluster.stop()


def test_each_gateway_names_itself_in_runtime_and_cluster_info(three):
    for n, g in three.items():
        info = remoting_call(g.remoting_port, 28, {})  # GET_BROKER_RUNTIME_INFO
        assert info["table"]["brokerName"] == f"broker-{n}"
        cluster = remoting_call(g.remoting_port, 106, {})  # GET_BROKER_CLUSTER_INFO
        assert cluster["brokerAddrTable"][f"broker-{n}"]["brokerAddrs"]["0"] == f"127.0.0.1:{g.remoting_port}"


def test_query_assignment_names_the_brokers_of_the_route(three):
    gws = three
    route = remoting_call(gws[1].remoting_port, 105, {"topic": TOPIC})
    route_queues = sorted((q["brokerName"], i) for q in route["queueDatas"] for i in range(q["readQueueNums"]))
    body = json.dumps({"topic": TOPIC, "consumerGroup": "assign-g", "clientId": "c1",
                       "messageModel": "CLUSTERING"}).encode()
    for g in gws.values():  # PULL mode (unset): every queue of the route, by its broker-local id
        got = remoting_call(g.remoting_port, 400, {}, body)["messageQueueAssignments"]  # QUERY_ASSIGNMENT
        assert sorted((a["messageQueue"]["brokerName"], a["messageQueue"]["queueId"]) for a in got) == route_queues
    mode = json.dumps({"topic": TOPIC, "consumerGroup": "assign-g", "mode": "POP", "popShareQueueNum": 0}).encode()
    for g in gws.values():
        assert remoting_call(g.remoting_port, 401, {}, mode).code == 0  # SET_MESSAGE_REQUEST_MODE
    got = remoting_call(gws[2].remoting_port, 400, {}, body)["messageQueueAssignments"]
    assert sorted((a["messageQueue"]["brokerName"], a["messageQueue"]["queueId"]) for a in got) == [
        ("broker-1", -1), ("broker-2", -1), ("broker-3", -1)]


def test_pop_consumer_reads_and_acks_every_message_once_across_gateways(three):
    gws = three
    sent = [b"m%03d" % i for i in range(90)]
    with Producer("pop-cluster-p", gws[1].namesrv) as p:
        for body in sent:
            p.send(Message(TOPIC, body))
    with SimpleConsumer("pop-cluster-g", gws[2].namesrv, consume_from=ConsumeFrom.FIRST_OFFSET,
                        subscriptions={TOPIC: "*"}, await_duration=1) as c:
        got = []
        deadline = time.monotonic() + 60
        while len(got) < len(sent) and time.monotonic() < deadline:
            batch = c.receive(max_messages=32, invisible_duration=4)
            for m in batch:
                c.ack(m)  # raises unless the broker named in the receipt had it in flight
            got += batch
        brokers = collections.Counter(m.properties["POP_CK"].split(" ")[5] for m in got)
        assert sorted(m.body for m in got) == sorted(sent)
        assert sorted(brokers) == ["broker-1", "broker-2", "broker-3"]
        time.sleep(6)  # past the invisible time: an unacknowledged message would come back now
        again = []
        for _ in range(3):
            again += c.receive(max_messages=32, invisible_duration=4)
        assert again == []
