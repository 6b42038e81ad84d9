"""ListConfigResources (key 74, KIP-1142): which resources have configs, raw and through kafka-python's
admin client. Run first against Kafka 4.3.1 (KAFKA_REFERENCE_BOOTSTRAP, see kafka_target)."""
from __future__ import annotations

import uuid

from kafka_target import eventually, target  # noqa: F401 (fixture)

LIST_CONFIG_RESOURCES, METADATA, INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CLUSTER = 74, 3, 44, 60
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
NONE, UNSUPPORTED_VERSION = 0, 35


def _listed(client, types: list[int]) -> set[tuple[str, int]]:
    resp = client.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": types})
    assert resp["error_code"] == NONE
    return {(r["resource_name"], r["resource_type"]) for r in resp["config_resources"]}


def _topic(client) -> str:
    name = f"lcr-{uuid.uuid4().hex[:8]}"
    eventually(lambda: _created(client.call(METADATA, 12, {"topics": [{"name": name, "topic_id": bytes(16)}],
                                                           "allow_auto_topic_creation": True})))
    return name


def _created(resp: dict) -> None:
    assert resp["topics"][0]["error_code"] == NONE


def _broker_ids(client) -> set[str]:
    resp = client.call(DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
    return {str(b["broker_id"]) for b in resp["brokers"]}


def test_every_type_when_none_is_named(target):
    c = target.raw()
    topic = _topic(c)
    everything = _listed(c, [])
    brokers = _broker_ids(c)
    assert {(topic, TOPIC), ("__consumer_offsets", TOPIC)} <= everything
    assert {(b, BROKER) for b in brokers} | {(b, BROKER_LOGGER) for b in brokers} <= everything
    assert _listed(c, [TOPIC]) == {r for r in everything if r[1] == TOPIC}
    assert _listed(c, [BROKER]) == {(b, BROKER) for b in brokers}
    assert _listed(c, [CLIENT_METRICS]) == set()  # no client-metrics subscription
    c.close()


def test_groups_with_a_config_of_their_own(target):
    c = target.raw()
    group = f"lcr-group-{uuid.uuid4().hex[:8]}"
    assert (group, GROUP) not in _listed(c, [GROUP])
    resp = c.call(INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{
        "resource_type": GROUP, "resource_name": group,
        "configs": [{"name": "share.record.lock.duration.ms", "config_operation": 0, "value": "20000"}]}],
        "validate_only": False})
    assert resp["responses"][0]["error_code"] == NONE
    assert (group, GROUP) in _listed(c, [GROUP])
    assert all(t == GROUP for _, t in _listed(c, [GROUP]))
    c.close()


def test_unsupported_type_and_v0(target):
    c = target.raw()
    for types in ([1], [99], [TOPIC, 64]):  # 1 is UNKNOWN; 99 and 64 are no resource type
        resp = c.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": types})
        assert (resp["error_code"], resp["config_resources"]) == (UNSUPPORTED_VERSION, [])
    v0 = c.call(LIST_CONFIG_RESOURCES, 0, {})  # v0 (ListClientMetricsResources): client-metrics resources only
    assert (v0["error_code"], v0["config_resources"]) == (NONE, [])
    c.close()


def test_kafka_python_list_config_resources(target):
    from kafka.admin import KafkaAdminClient

    c = target.raw()
    topic = _topic(c)
    c.close()
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap, request_timeout_ms=30000)
    try:
        found = admin.list_config_resources(["TOPIC"])
        assert set(found) == {"topic"} and topic in found["topic"]
        assert {"topic", "broker", "broker_logger"} <= set(admin.list_config_resources())
    finally:
        admin.close()
