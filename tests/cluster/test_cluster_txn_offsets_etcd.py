"""A Kafka EndTxn that commits a transaction's offsets (TxnOffsetCommit) is answered, in a cluster,
only once etcd has those offsets, as a plain OffsetCommit is (test_cluster_offset_commit_etcd.py):
with etcd away it is COORDINATOR_NOT_AVAILABLE (the client retries the end), and a retry is answered
NONE only once etcd is back and holds them. Before, the end was acknowledged with the offsets held by
this gateway alone. Gateway and etcd only: Apache Kafka has no etcd to take away."""
from __future__ import annotations

import pytest
from clusters import require_etcd, start_cluster
from raw_kafka import RawClient

from codec.kafka.apis import ADD_OFFSETS_TO_TXN, CREATE_TOPICS, END_TXN, INIT_PRODUCER_ID, OFFSET_FETCH, \
    TXN_OFFSET_COMMIT

TOPIC = "TxnOffsetsEtcdK"
GROUP = "txn-offsets-etcd"
TID = "txn-offsets-etcd"
NONE, COORDINATOR_NOT_AVAILABLE = 0, 15


@pytest.mark.parametrize("end_version", [3, 5])  # 5: transactions v2, whose retry is the retried-end path
def test_an_end_txn_is_answered_once_etcd_has_its_offsets(tmp_path, end_version):
    require_etcd()
    cluster = start_cluster(tmp_path, nodes=[1], lease_ttl=30)  # no fencing while etcd is away
    try:
        client = RawClient(cluster.gateways[1].kafka_bootstrap, timeout=60)
        created = client.call(CREATE_TOPICS.key, 7, {"topics": [{
            "name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10000, "validate_only": False})
        assert created["topics"][0]["error_code"] == NONE
        init = client.call(INIT_PRODUCER_ID.key, 4, {"transactional_id": TID, "transaction_timeout_ms": 60000,
                                                      "producer_id": -1, "producer_epoch": -1})
        assert init["error_code"] == NONE, init
        txn = {"transactional_id": TID, "producer_id": init["producer_id"], "producer_epoch": init["producer_epoch"]}
        assert client.call(ADD_OFFSETS_TO_TXN.key, 3, dict(txn, group_id=GROUP))["error_code"] == NONE
        committed = client.call(TXN_OFFSET_COMMIT.key, 3, dict(
            txn, group_id=GROUP, generation_id=-1, member_id="", group_instance_id=None, topics=[{
                "name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 42,
                                               "committed_leader_epoch": -1, "committed_metadata": ""}]}]))
        assert committed["topics"][0]["partitions"][0]["error_code"] == NONE
        cluster.etcd.stop()
        end = dict(txn, committed=True)
        assert client.call(END_TXN.key, end_version, end)["error_code"] == COORDINATOR_NOT_AVAILABLE  # before: NONE
        cluster.etcd.start()
        assert client.call(END_TXN.key, end_version, end)["error_code"] == NONE  # the retry, once etcd has them
        fetched = client.call(OFFSET_FETCH.key, 7, {"group_id": GROUP, "require_stable": True,
                                                    "topics": [{"name": TOPIC, "partition_indexes": [0]}]})
        assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 42
    finally:
        cluster.stop()
