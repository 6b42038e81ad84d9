"""A Kafka OffsetCommit refused for want of etcd (COORDINATOR_NOT_AVAILABLE, see
test_cluster_offset_commit_etcd.py) is withdrawn: it never reaches etcd later. Before, it stayed
queued in that gateway's mirror and was written once etcd was back; the last write wins, so it
overwrote the newer commit another gateway had acknowledged meanwhile: an acknowledged commit went
backwards. Two gateways and a real etcd; gateway 1 reaches etcd through a TCP proxy the test cuts.
Gateway and etcd only: Apache Kafka has no etcd to take away."""
from __future__ import annotations

import json

import trio
from clusters import require_etcd, start_cluster, start_etcd, wait_for
from gateway_process import free_port
from raw_kafka import RawClient
from tcp_proxy import TcpProxy

from cluster import model
from cluster.etcd import Etcd
from codec.kafka.apis import CREATE_TOPICS, OFFSET_COMMIT, OFFSET_FETCH

TOPIC = "CommitRefusedK"
GROUP = "commit-refused"
NONE, COORDINATOR_NOT_AVAILABLE = 0, 15


def _commit(client: RawClient, offset: int, group: str = GROUP) -> int:
    r = client.call(OFFSET_COMMIT.key, 9, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                           "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [{
                                               "partition_index": 0, "committed_offset": offset,
                                               "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    return r["topics"][0]["partitions"][0]["error_code"]


def _committed(client: RawClient) -> int:
    r = client.call(OFFSET_FETCH.key, 7, {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                                          "require_stable": False})
    return r["topics"][0]["partitions"][0]["committed_offset"]


def _in_etcd(url: str) -> int | None:
    async def get():
        etcd = Etcd.from_url(url)
        try:
            kv = await etcd.get(model.offset_key(GROUP, TOPIC, 0))
        finally:
            await etcd.aclose()
        return None if kv is None else json.loads(kv.value)["offset"]
    return trio.run(get)


def cluster_with_cuttable_etcd(tmp_path):
    """Gateways 1 and 2 on a real etcd, gateway 1 through a TCP proxy a test cuts: (cluster, proxy),
    both for the caller to stop. The lease outlives the cut: gateway 1 stays a member, its mirror
    keeps what it queued."""
    require_etcd()
    etcd = start_etcd(tmp_path)
    proxy = TcpProxy(etcd.client_port, free_port()).start()
    try:
        cluster = start_cluster(tmp_path, [1, 2], lease_ttl=30, etcd=etcd,
                                cluster_urls={1: f"etcd://127.0.0.1:{proxy.port}"})
    except BaseException:
        proxy.stop()
        raise
    return cluster, proxy


def create_topic(client: RawClient) -> None:
    created = client.call(CREATE_TOPICS.key, 7, {"topics": [{
        "name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 10000, "validate_only": False})
    assert created["topics"][0]["error_code"] == NONE


def test_a_refused_commit_never_overwrites_a_newer_one(tmp_path):
    cluster, proxy = cluster_with_cuttable_etcd(tmp_path)
    etcd = cluster.etcd
    try:
        first = RawClient(cluster.gateways[1].kafka_bootstrap, timeout=60)
        second = RawClient(cluster.gateways[2].kafka_bootstrap, timeout=60)
        create_topic(second)
        wait_for(lambda: _commit(first, 0, "probe") == NONE, what="the topic on gateway 1")
        assert _commit(first, 49) == NONE  # A, in etcd
        proxy.cut()
        assert _commit(first, 53) == COORDINATOR_NOT_AVAILABLE  # B, refused
        assert _committed(first) == 49  # undone: never acknowledged
        assert _commit(second, 51) == NONE  # C, the group's commit elsewhere, acknowledged
        proxy.restore()
        # acknowledged once gateway 1's mirror wrote everything it had queued (before: B too)
        wait_for(lambda: _commit(first, 1, "probe") == NONE, 30, what="gateway 1 writing to etcd again")
        assert _in_etcd(etcd.url) == 51
        wait_for(lambda: _committed(first) == 51 and _committed(second) == 51, what="C on both gateways")
        assert _in_etcd(etcd.url) == 51
    finally:
        cluster.stop()
        proxy.stop()
