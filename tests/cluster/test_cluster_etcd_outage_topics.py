"""A topic created while etcd is unreachable (Kafka Metadata auto-creation) is published to etcd once
it is back, and the gateway keeps serving meanwhile. Before, the cluster service's publish raised
EtcdError out of its nursery and the gateway exited (found with the commit test of
test_cluster_offset_commit_etcd.py). Gateway and etcd only: Apache Kafka has no etcd."""
from __future__ import annotations

import os

from clusters import require_etcd, start_cluster, wait_for
from gateway_process import GatewayProcess
from raw_kafka import RawClient

from codec.kafka.apis import METADATA

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
