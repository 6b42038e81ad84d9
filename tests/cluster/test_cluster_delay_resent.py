"""A due-message forward whose answer was lost is sent again, and the leader stores it once
(gateway.cluster.delivery, semantics.delay_forward; docs/faults.md, finding 8 of the fourth stop):
two real gateways on a real etcd. Gateway 2 advertises 127.0.0.2, where a proxy in front of its
real listener loses the answer to one CLUSTER_DELIVER (after gateway 2 stored and replicated the
message) and resets that connection. A RocketMQ transaction's half waits at gateway 1, its queue
moves to gateway 2, the check-back commits it at gateway 1, which forwards the committed record to
gateway 2: the first forward's answer is lost, the second must not store the record again."""
from __future__ import annotations

import os
import threading

import pytest
from answer_proxy import AnswerDropProxy
from confluent_kafka.admin import AdminClient, NewTopic

from client import Message, TransactionProducer, TransactionState
from clusters import Cluster, require_etcd, start_etcd, wait_for
from codec.remoting import RequestCode
from gateway_process import GatewayProcess, stop_all
from raw_kafka import remoting_call
from tcp_proxy import TcpProxy

TOPIC = "tx-answer-lost"


def gateway(base, node: int, etcd, host: str) -> GatewayProcess:
    return GatewayProcess(os.path.join(str(base), f"node{node}"), extra_args=[
        "--cluster", etcd.url, "--node-id", str(node), "--advertised-host", host, "--cluster-lease-ttl", "3",
        "--transaction-timeout-ms", "300", "--transaction-check-interval-ms", "500", "--transaction-check-max", "1000"])


@pytest.fixture
def two(tmp_path):
    require_etcd()
    etcd = start_etcd(tmp_path)
    g1, g2 = gateway(tmp_path, 1, etcd, "127.0.0.1"), gateway(tmp_path, 2, etcd, "127.0.0.2")
    proxies = [AnswerDropProxy("127.0.0.2", g2.remoting_port, g2.remoting_port, RequestCode.CLUSTER_DELIVER),
               TcpProxy(g2.kafka_port, g2.kafka_port, host="127.0.0.2")]
    cluster = Cluster(etcd, {1: g1, 2: g2})
    try:
        for p in proxies:
            p.start()
        g1.start()
        g2.start()
        admin = AdminClient({"bootstrap.servers": g1.kafka_bootstrap})
        wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == 2, 60, "both gateways registered")
        yield cluster, proxies[0]
    finally:
        stop_all([*cluster.gateways.values(), etcd])
        for p in proxies:
            p.stop()


def state(g) -> dict:
    return remoting_call(g.remoting_port, RequestCode.REPLICA_STATE, {"topic": TOPIC, "queueId": "0"})


def lead(cluster, leader: int) -> None:
    from gateway.admin.cli import main
    gws, other = cluster.gateways, 3 - leader
    assert main(["cluster", "reassign", "--etcd", cluster.etcd.url, TOPIC, "0", "--replicas", f"{leader},{other}"]) == 0
    wait_for(lambda: state(gws[leader]).get("role") == "leader" and state(gws[other]).get("role") == "follower"
             and state(gws[other]).get("epoch") == state(gws[leader]).get("epoch"), what=f"node {leader} to lead")


def test_a_forward_whose_answer_was_lost_is_stored_once(two):
    cluster, proxy = two
    gws = cluster.gateways
    admin = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=2)])[TOPIC].result(10)
    lead(cluster, 1)
    moved = threading.Event()
    p = TransactionProducer("tx-lost-pg", gws[1].namesrv, local_transaction=lambda m, a: TransactionState.UNKNOWN,
                            check_listener=lambda m: TransactionState.COMMIT if moved.is_set()
                            else TransactionState.UNKNOWN).start()
    try:
        r, _ = p.send_in_transaction(Message(TOPIC, b"committed-once"))
        assert r.queue.broker_name == "broker-1"  # the half waits in gateway 1's half topic
        lead(cluster, 2)
        proxy.armed = True  # gateway 2's answer to the first forward is lost
        moved.set()  # the next check-back commits it at gateway 1, which forwards it to gateway 2
        wait_for(lambda: proxy.answered >= 1, 40, "a forward answered after the lost answer")
    finally:
        p.shutdown()
    assert proxy.dropped == 1
    assert state(gws[2])["logEnd"] == 1, "the committed record was stored twice"
    wait_for(lambda: state(gws[1])["logEnd"] == 1, what="the follower to hold the leader's log")
