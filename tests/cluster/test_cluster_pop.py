"""RocketMQ 5 POP over several brokers: three gateways (each answering as its own broker, broker-<node
id>, its BrokerData name in routes) and, with CLUSTER_REFERENCE=1, a real RocketMQ 5.5 cluster of a
name server and two brokers (reference_sides.py), through the same test bodies. Each broker names
itself in GET_BROKER_CONFIG and the cluster table; QUERY_ASSIGNMENT gives a consumer registered by
HEART_BEAT every queue of the route (PULL) or each broker's queue -1 (POP); a POP of all queues
(queueId -1) at a broker reads only the queues it holds, under the broker-local queue ids the route
gives, so the native client's receipts (ExtraInfo: brokerName, queueId) ack at the right broker and
nothing acknowledged comes back."""
from __future__ import annotations

import collections
import json
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from client import ConsumeFrom, Message, Producer, SimpleConsumer
from clusters import NODES, require_etcd, start_cluster
from raw_kafka import remoting_call
from reference_sides import Remoting, gateway_brokers, reference_only, remoting_json, rocketmq_brokers
from test_cluster_clients import led_by, wait_for

from codec.remoting.codes import RequestCode as RC

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


@pytest.fixture(scope="module", params=["gateways", pytest.param("rocketmq", marks=reference_only)])
def brokers(request, tmp_path_factory):
    if request.param == "gateways":
        yield gateway_brokers(request.getfixturevalue("three"))
    else:
        with rocketmq_brokers(tmp_path_factory.mktemp("pop-reference"), {TOPIC: (3, None)}) as side:
            yield side


def test_each_gateway_names_itself_in_runtime_info(three):
    """Ours only: a 5.5 broker's runtime table has no brokerName (its GET_BROKER_CONFIG has)."""
    for n, g in three.items():
        info = remoting_call(g.remoting_port, RC.GET_BROKER_RUNTIME_INFO, {})
        assert info["table"]["brokerName"] == f"broker-{n}"


def test_each_broker_names_itself_in_its_config_and_the_cluster_table(brokers):
    for name, port in brokers.ports.items():
        with Remoting(port) as r:
            config = r.call(RC.GET_BROKER_CONFIG)
        assert config.code == 0 and f"brokerName={name}\n" in config.body.decode()
        for i in range(len(brokers.namesrvs)):  # every name server has every broker at its address
            cluster = remoting_json(brokers.namesrv_port(i), RC.GET_BROKER_CLUSTER_INFO)
            assert cluster["brokerAddrTable"][name]["brokerAddrs"]["0"] == f"127.0.0.1:{port}"
            assert name in cluster["clusterAddrTable"]["DefaultCluster"]


def _heartbeat(group: str, client_id: str) -> bytes:
    """A push consumer's HEART_BEAT: a broker assigns queues only to the group's registered clients."""
    return json.dumps({"clientID": client_id, "producerDataSet": [], "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False, "subscriptionDataSet": [{
            "topic": TOPIC, "subString": "*", "expressionType": "TAG", "tagsSet": [], "codeSet": [],
            "subVersion": 0, "classFilterMode": False}]}]}).encode()


def _assignment(port: int, body: bytes) -> list:
    """(brokerName, queueId) of QUERY_ASSIGNMENT asked by client c1 of assign-g, registered first on
    the same connection (a 5.x broker answers null for a client it does not know)."""
    with Remoting(port) as r:
        assert r.call(RC.HEART_BEAT, body=_heartbeat("assign-g", "c1")).code == 0
        got = r.json(RC.QUERY_ASSIGNMENT, body=body)["messageQueueAssignments"]
    return sorted((a["messageQueue"]["brokerName"], a["messageQueue"]["queueId"]) for a in got)


def test_query_assignment_names_the_brokers_of_the_route(brokers):
    route = brokers.route(TOPIC)
    route_queues = sorted((q["brokerName"], i) for q in route["queueDatas"] for i in range(q["readQueueNums"]))
    assert sorted({b for b, _ in route_queues}) == brokers.names
    # strategyName: a 5.x broker has no default strategy (none named: a null assignment)
    body = json.dumps({"topic": TOPIC, "consumerGroup": "assign-g", "clientId": "c1",
                       "messageModel": "CLUSTERING", "strategyName": "AVG"}).encode()
    for port in brokers.ports.values():  # PULL mode (unset): every queue of the route, by its broker-local id
        assert _assignment(port, body) == route_queues
    mode = json.dumps({"topic": TOPIC, "consumerGroup": "assign-g", "mode": "POP", "popShareQueueNum": 0}).encode()
    for port in brokers.ports.values():
        with Remoting(port) as r:
            assert r.call(RC.SET_MESSAGE_REQUEST_MODE, body=mode).code == 0
    for port in brokers.ports.values():
        assert _assignment(port, body) == [(name, -1) for name in brokers.names]


def test_pop_consumer_reads_and_acks_every_message_once_across_brokers(brokers):
    sent = [b"m%03d" % i for i in range(90)]
    with Producer("pop-cluster-p", brokers.namesrvs[0]) as p:
        for body in sent:
            p.send(Message(TOPIC, body))
    with SimpleConsumer("pop-cluster-g", brokers.namesrvs[-1], consume_from=ConsumeFrom.FIRST_OFFSET,
                        subscriptions={TOPIC: "*"}, await_duration=1) as c:
        got = []
        deadline = time.monotonic() + 60
        while len(got) < len(sent) and time.monotonic() < deadline:
            batch = c.receive(max_messages=32, invisible_duration=4)
            for m in batch:
                c.ack(m)  # raises unless the broker named in the receipt had it in flight
            got += batch
        names = collections.Counter(m.properties["POP_CK"].split(" ")[5] for m in got)
        assert sorted(m.body for m in got) == sorted(sent)
        assert sorted(names) == brokers.names
        time.sleep(6)  # past the invisible time: an unacknowledged message would come back now
        again = []
        for _ in range(3):
            again += c.receive(max_messages=32, invisible_duration=4)
        assert again == []
