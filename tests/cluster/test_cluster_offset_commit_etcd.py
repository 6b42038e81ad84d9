"""A Kafka OffsetCommit in a cluster is acknowledged only once etcd has it: etcd is where the
committed offsets are durable cluster-wide, and the gateway that takes a group over reads them from
there. Before, the coordinator acknowledged a commit it could not write to etcd (cut from it), the
group moved, and the consumer resumed at an older offset than one acknowledged (docs/faults.md,
findings: seed 26, 53 acknowledged, resumed at 49). Now such a commit is answered
COORDINATOR_NOT_AVAILABLE after the commit timeout (as Kafka answers a commit whose __consumer_offsets
write timed out). Gateway and etcd only: Apache Kafka has no etcd to take away."""
from __future__ import annotations

from clusters import require_etcd, start_cluster
from raw_kafka import RawClient, remoting_call

from codec.kafka.apis import CREATE_TOPICS, OFFSET_COMMIT
from codec.remoting.codes import RequestCode, ResponseCode

TOPIC = "CommitEtcdK"
GROUP = "commit-etcd"
NONE, COORDINATOR_NOT_AVAILABLE = 0, 15
SUCCESS, SYSTEM_ERROR = ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR
UPDATE_CONSUMER_OFFSET, QUERY_CONSUMER_OFFSET = RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET


def _commit(client: RawClient, offset: int) -> int:
    r = client.call(OFFSET_COMMIT.key, 9, {"group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
                                           "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [{
                                               "partition_index": 0, "committed_offset": offset,
                                               "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    return r["topics"][0]["partitions"][0]["error_code"]


def test_a_commit_etcd_does_not_have_is_not_acknowledged(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, nodes=[1], lease_ttl=30)  # no fencing while etcd is away
    try:
        client = RawClient(cluster.gateways[1].kafka_bootstrap, timeout=60)
        created = client.call(CREATE_TOPICS.key, 7, {"topics": [{  # answered once etcd has the topic
            "name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10000, "validate_only": False})
        assert created["topics"][0]["error_code"] == NONE
        assert _commit(client, 49) == NONE  # etcd has it
        cluster.etcd.stop()
        assert _commit(client, 53) == COORDINATOR_NOT_AVAILABLE  # before: NONE, held only by this gateway
    finally:
        cluster.stop()


def _update_consumer_offset(port: int, offset: int) -> int:
    resp = remoting_call(port, UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0",
                                                        "commitOffset": str(offset)})
    return resp.code


def test_a_two_way_rocketmq_offset_update_etcd_does_not_have_is_refused_and_undone(tmp_path):
    """The same for a two-way UPDATE_CONSUMER_OFFSET: SYSTEM_ERROR, and the gateway keeps etcd's value."""
    require_etcd()
    cluster = start_cluster(tmp_path, nodes=[1], lease_ttl=30)
    try:
        gateway = cluster.gateways[1]
        client = RawClient(gateway.kafka_bootstrap, timeout=60)
        created = client.call(CREATE_TOPICS.key, 7, {"topics": [{
            "name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10000, "validate_only": False})
        assert created["topics"][0]["error_code"] == NONE
        assert _update_consumer_offset(gateway.remoting_port, 49) == SUCCESS
        cluster.etcd.stop()
        assert _update_consumer_offset(gateway.remoting_port, 53) == SYSTEM_ERROR  # before: SUCCESS
        query = remoting_call(gateway.remoting_port, QUERY_CONSUMER_OFFSET, {
            "consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"})
        assert query.ext_fields["offset"] == "49"  # undone
    finally:
        cluster.stop()
