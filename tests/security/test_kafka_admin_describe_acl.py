"""DescribeLogDirs, DescribeProducers, DescribeTransactions, ListTransactions and ListConfigResources
over SASL_SSL with ACLs (kafka-python): alice may read/write `orders` only; admin is a super user. Also run against real Kafka
by validate_against_kafka.py."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import TopicAuthorizationFailedError
from kafka.protocol.admin.cluster import DescribeLogDirsRequest
from kafka.protocol.admin.transactions import DescribeTransactionsRequest

from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ADMIN, ADMIN_PW, ALICE, ALICE_PW
from tests.security.test_kafka_sasl_ssl import gw  # noqa: F401 - the shared SASL_SSL gateway fixture

CLUSTER_DENIED, TXN_DENIED = 31, 53


def _client(broker, user: str, password: str) -> KafkaAdminClient:
    return KafkaAdminClient(**kg.kafka_python(broker, user, password))


def _send(client: KafkaAdminClient, request):
    """The raw answer of the (only) broker, so the error placement is visible."""
    node = next(iter(client._manager.cluster.brokers())).node_id

    async def call():
        return await client._manager.send(request, node_id=node)
    return client._manager.run(call)


def test_describe_log_dirs_needs_describe_on_the_cluster(gw):  # noqa: F811
    alice, admin = _client(gw, ALICE, ALICE_PW), _client(gw, ADMIN, ADMIN_PW)
    try:
        denied = _send(alice, DescribeLogDirsRequest(topics=None))
        assert (denied.error_code, list(denied.results)) == (CLUSTER_DENIED, [])
        served = _send(admin, DescribeLogDirsRequest(topics=None))
        assert served.error_code == 0 and len(served.results) >= 1
    finally:
        alice.close()
        admin.close()


def test_list_config_resources_needs_describe_configs_on_the_cluster(gw):  # noqa: F811
    from kafka.protocol.admin.configs import ListConfigResourcesRequest
    alice, admin = _client(gw, ALICE, ALICE_PW), _client(gw, ADMIN, ADMIN_PW)
    try:
        denied = _send(alice, ListConfigResourcesRequest(resource_types=[]))
        assert (denied.error_code, list(denied.config_resources)) == (CLUSTER_DENIED, [])
        served = _send(admin, ListConfigResourcesRequest(resource_types=[]))
        assert served.error_code == 0 and len(served.config_resources) >= 1
    finally:
        alice.close()
        admin.close()


def test_describe_producers_needs_read_on_the_topic(gw):  # noqa: F811
    alice = _client(gw, ALICE, ALICE_PW)
    try:
        broker = next(iter(alice._manager.cluster.brokers())).node_id
        assert TopicPartition("orders", 0) in alice.describe_producers([TopicPartition("orders", 0)], broker)
        with pytest.raises(TopicAuthorizationFailedError):
            alice.describe_producers([TopicPartition("secret", 0)], broker)
    finally:
        alice.close()


def test_transactions_need_describe_on_the_transactional_id(gw):  # noqa: F811
    p = Producer({**kg.librdkafka(gw, ADMIN, ADMIN_PW), "transactional.id": "admins-tx"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("secret", b"v")
    p.commit_transaction(30)
    alice, admin = _client(gw, ALICE, ALICE_PW), _client(gw, ADMIN, ADMIN_PW)
    try:
        [state] = _send(alice, DescribeTransactionsRequest(transactional_ids=["admins-tx"])).transaction_states
        assert (state.transactional_id, state.error_code) == ("admins-tx", TXN_DENIED)
        assert "admins-tx" in admin.describe_transactions(["admins-tx"])
        listed = lambda client: {t.transactional_id for ts in client.list_transactions().values() for t in ts}  # noqa: E731
        assert "admins-tx" in listed(admin)
        assert "admins-tx" not in listed(alice)
    finally:
        alice.close()
        admin.close()


def test_client_quotas_need_configs_rights_on_the_cluster(gw):  # noqa: F811
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
    E = AlterClientQuotasRequest.EntryData
    alter = AlterClientQuotasRequest(entries=[E(
        entity=[E.EntityData(entity_type="client-id", entity_name="quota-acl")],
        ops=[E.OpData(key="producer_byte_rate", value=1024.0, remove=False)])], validate_only=False)
    describe = DescribeClientQuotasRequest(components=[DescribeClientQuotasRequest.ComponentData(
        entity_type="client-id", match_type=0, match="quota-acl")], strict=False)
    alice, admin = _client(gw, ALICE, ALICE_PW), _client(gw, ADMIN, ADMIN_PW)
    try:
        assert [e.error_code for e in _send(alice, alter).entries] == [CLUSTER_DENIED]
        assert _send(alice, describe).error_code == CLUSTER_DENIED
        assert [e.error_code for e in _send(admin, alter).entries] == [0]
        for _ in range(50):  # Kafka's broker sees the controller's quota record a little later
            entries = _send(admin, describe).entries
            if entries:
                break
            time.sleep(0.2)
        [entry] = entries
        assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 1024.0)]
    finally:
        alice.close()
        admin.close()
