"""A topic created while etcd is unreachable (Kafka Metadata auto-creation) is published to etcd once
it is back, and the gateway keeps serving meanwhile. Before, the cluster service's publish raised
EtcdError out of its nursery and the gateway exited (found with the commit test of
test_cluster_offset_commit_etcd.py). Gateway and etcd only: Apache Kafka has no etcd."""
from __future__ import annotations

import os

from confluent_kafka.admin import AdminClient

from clusters import require_etcd, start_cluster, wait_for
from gateway_process import GatewayProcess
from raw_kafka import RawClient, remoting_call

from codec.kafka.apis import CREATE_TOPICS, METADATA
from codec.remoting import RequestCode, ResponseCode
from gateway.kafka.errors import LEADER_NOT_AVAILABLE, REQUEST_TIMED_OUT, UNKNOWN_TOPIC_OR_PARTITION

TOPIC = "OutageK"


def _topic_error(bootstrap: str, create: bool) -> int:
    resp = RawClient(bootstrap, timeout=30).call(METADATA.key, 9, {
        "topics": [{"name": TOPIC}], "allow_auto_topic_creation": create,
        "include_topic_authorized_operations": False})
    return resp["topics"][0]["error_code"]


def test_a_topic_created_while_etcd_is_away_is_published_once_it_is_back(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, nodes=[1], lease_ttl=30)  # the lease outlives the outage
    try:
        first = cluster.gateways[1]
        cluster.etcd.stop()
        _topic_error(first.kafka_bootstrap, create=True)  # created in the local store, etcd away
        cluster.etcd.start()
        second = cluster.gateways[2] = GatewayProcess(os.path.join(str(tmp_path), "node2"), extra_args=[
            "--cluster", cluster.etcd.url, "--node-id", "2", "--advertised-host", "127.0.0.1",
            "--cluster-lease-ttl", "30"]).start()
        wait_for(lambda: _topic_error(second.kafka_bootstrap, create=False) == 0, what="the topic in etcd")
        assert first.proc.poll() is None, "the gateway exited during the etcd outage"
    finally:
        cluster.stop()


def test_a_topic_etcd_has_not_taken_is_neither_answered_created_nor_shown(tmp_path):
    """docs/faults.md, "Open A" of the Java runs (finding 5): the creating gateway showed the topic
    before etcd had it, and a reload from etcd withdrew it again. Now CreateTopics answers
    REQUEST_TIMED_OUT (it may still be created: the write is retried) and no read shows the topic
    (Metadata by name or listed, a RocketMQ route or topic list) until etcd has it."""
    require_etcd()
    cluster = start_cluster(tmp_path, nodes=[1], lease_ttl=30)  # the lease outlives the outage
    try:
        g = cluster.gateways[1]
        cluster.etcd.stop()
        resp = RawClient(g.kafka_bootstrap, timeout=30).call(CREATE_TOPICS.key, 4, {
            "topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 1000, "validate_only": False})
        assert resp["topics"][0]["error_code"] == REQUEST_TIMED_OUT
        assert _topic_error(g.kafka_bootstrap, create=False) == UNKNOWN_TOPIC_OR_PARTITION
        assert _topic_error(g.kafka_bootstrap, create=True) == LEADER_NOT_AVAILABLE
        assert TOPIC not in _listed(g.kafka_bootstrap) and "__consumer_offsets" in _listed(g.kafka_bootstrap)
        route = remoting_call(g.remoting_port, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
        assert route.code == ResponseCode.TOPIC_NOT_EXIST
        listed = remoting_call(g.remoting_port, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {})
        assert TOPIC not in listed["topicList"]
        cluster.etcd.start()
        wait_for(lambda: _topic_error(g.kafka_bootstrap, create=False) == 0, what="the topic once etcd has it")
        assert TOPIC in _listed(g.kafka_bootstrap)
    finally:
        cluster.stop()


def _listed(bootstrap: str) -> list[str]:
    return list(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=20).topics)
