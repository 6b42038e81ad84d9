"""InitProducerId while etcd is unreachable and the gateway has no producer id block left (a fresh
gateway takes its first block from etcd at the first InitProducerId): answered with a retriable error,
as Kafka answers when its next producer id block is not there yet (COORDINATOR_LOAD_IN_PROGRESS for an
idempotent producer; COORDINATOR_NOT_AVAILABLE for a transactional id, whose state is in etcd too).
Before, EtcdError escaped the handler and the connection was closed with a traceback (`make faults`
seed 2612, EndTxn in a cut-from-etcd window). Gateway and etcd only: Apache Kafka has no etcd."""
from __future__ import annotations

from clusters import require_etcd, start_cluster
from raw_kafka import RawClient

from codec.kafka.apis import INIT_PRODUCER_ID

COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE = 14, 15


def _init(client: RawClient, txn_id: str | None) -> int:
    return client.call(INIT_PRODUCER_ID.key, 4, {"transactional_id": txn_id, "transaction_timeout_ms": 60000,
                                                 "producer_id": -1, "producer_epoch": -1})["error_code"]


def test_init_producer_id_without_etcd_is_a_retriable_error(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, nodes=[1], lease_ttl=30)  # the lease outlives the outage
    try:
        cluster.etcd.stop()
        client = RawClient(cluster.gateways[1].kafka_bootstrap, timeout=30)
        assert _init(client, None) == COORDINATOR_LOAD_IN_PROGRESS  # before: the connection closed
        assert _init(client, "ids-away") == COORDINATOR_NOT_AVAILABLE  # (the same connection: still open)
        client.close()
        cluster.etcd.start()
        assert _init(RawClient(cluster.gateways[1].kafka_bootstrap, timeout=30), None) == 0
    finally:
        cluster.stop()
