"""Topic configs as Kafka 4.x validates and describes them: CreateTopics (and validate_only),
IncrementalAlterConfigs, AlterConfigs, DescribeConfigs (sources, synonyms, read-only), GROUP resources.
Checked against a real Kafka 4.x first (kafka_target.py); `gateway_only` tests are ours alone."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewTopic)
from kafka_target import eventually, gateway_only, target  # noqa: F401 (fixture)
from shard_aware import broker_ids

CREATE_TOPICS, DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 19, 32, 33, 44
INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_TOPIC = 40, 42, 3
TOPIC, BROKER, GROUP = 2, 4, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _create(client, name: str, configs: dict, validate_only: bool = False) -> dict:
    body = {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
            "timeout_ms": 10000, "validate_only": validate_only}
    return client.call(CREATE_TOPICS, 7, body)["topics"][0]


def _describe(admin: AdminClient, name: str) -> dict:
    res = ConfigResource("topic", name)
    return eventually(lambda: admin.describe_configs([res])[res].result(10))


def _incremental(client, name: str, ops, rtype: int = TOPIC, validate_only: bool = False) -> tuple:
    body = {"resources": [{"resource_type": rtype, "resource_name": name, "configs": [
        {"name": n, "config_operation": op, "value": v} for n, op, v in ops]}], "validate_only": validate_only}
    r = client.call(INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"][0]
    return r["error_code"], r["error_message"]


@pytest.mark.parametrize("configs, message", [
    ({"bogus.config": "1"}, "Unknown topic config name: bogus.config"),
    ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ({"retention.ms": "-5"}, "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
    ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
    ({"cleanup.policy": "bogus"},
     "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"cleanup.policy": "delete,,compact"}, "Configuration 'cleanup.policy' values must not be empty."),
    ({"max.message.bytes": "2147483648"},
     "Invalid value 2147483648 for configuration max.message.bytes: Not a number of type INT"),
    ({"message.timestamp.type": "logappendtime"}, "Invalid value logappendtime for configuration "
                                                  "message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
    ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ({"segment.bytes": "100"}, "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"),
    ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one "
                                     "of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"compression.gzip.level": "0"},
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ({"min.cleanable.dirty.ratio": "1.5"},
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ({"message.format.version": "3.0"}, "Unknown topic config name: message.format.version"),
])
@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topic_refuses_bad_configs_with_kafkas_message(target, configs, message, validate_only):
    client = target.raw()
    name = _name("bad")
    t = _create(client, name, configs, validate_only)
    assert (t["error_code"], t["error_message"]) == (INVALID_CONFIG, message)
    assert _create(client, name, {}, validate_only=True)["error_code"] == 0  # nothing was created


def test_created_topic_describes_sources_defaults_and_synonyms(target):
    name = _name("cfg")
    client = target.raw()
    t = _create(client, name, {"retention.ms": "1000", "cleanup.policy": "compact, delete", "preallocate": "TRUE"})
    assert t["error_code"] == 0
    returned = {c["name"]: c for c in t["configs"]}
    assert returned["retention.ms"]["value"] == "1000" and returned["retention.ms"]["config_source"] == 1
    assert returned["compression.type"]["config_source"] == 5 and "segment.ms" in returned
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    entries = _describe(admin, name)
    assert set(returned) == set(entries)
    retention = entries["retention.ms"]
    assert retention.value == "1000" and retention.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not retention.is_default and not retention.is_read_only and not retention.is_sensitive
    assert entries["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    compression = entries["compression.type"]
    assert compression.value == "producer" and compression.source == ConfigSource.DEFAULT_CONFIG.value
    assert compression.is_default
    assert entries["max.message.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    synonyms = client.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": TOPIC, "resource_name": name,
                                                                 "configuration_keys": ["retention.ms"]}],
                                                  "include_synonyms": True, "include_documentation": False})
    (entry,) = synonyms["results"][0]["configs"]
    assert entry["synonyms"][0] == {"name": "retention.ms", "value": "1000", "source": 1}
    assert entry["config_type"] == 5  # LONG


def test_incremental_alter_set_delete_append_subtract(target):
    name = _name("inc")
    client = target.raw()
    assert _create(client, name, {"retention.ms": "5000", "cleanup.policy": "compact"})["error_code"] == 0
    assert _incremental(client, name, [("retention.ms", SET, "7000"), ("segment.ms", SET, "100000")]) == (0, None)
    assert _incremental(client, name, [("cleanup.policy", APPEND, "delete")]) == (0, None)
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    entries = eventually(lambda: _check(_describe(admin, name), "retention.ms", "7000"))
    assert entries["segment.ms"].value == "100000"
    assert entries["cleanup.policy"].value.replace(" ", "") == "compact,delete"
    assert _incremental(client, name, [("cleanup.policy", SUBTRACT, "compact"), ("retention.ms", DELETE, None)]) \
        == (0, None)
    entries = eventually(lambda: _check(_describe(admin, name), "cleanup.policy", "delete"))
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    # validate_only checks and does not apply
    assert _incremental(client, name, [("segment.ms", SET, "200000")], validate_only=True) == (0, None)
    assert _describe(admin, name)["segment.ms"].value == "100000"


def _check(entries: dict, key: str, value: str) -> dict:
    assert entries[key].value == value, (key, entries[key].value)
    return entries


@pytest.mark.parametrize("ops, code, message", [
    ([("retention.ms", SET, "abc")], INVALID_CONFIG,
     "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ([("bogus", SET, "1")], INVALID_CONFIG, "Unknown topic config name: bogus"),
    ([("retention.ms", APPEND, "1")], INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST."),
    ([("retention.ms", SET, None)], INVALID_REQUEST, "Null value not supported for : retention.ms"),
    ([("retention.ms", SET, "1"), ("retention.ms", SET, "2")], INVALID_REQUEST, "Error due to duplicate config keys"),
])
def test_incremental_alter_refusals(target, ops, code, message):
    name = _name("incbad")
    client = target.raw()
    assert _create(client, name, {"retention.ms": "5000"})["error_code"] == 0
    assert _incremental(client, name, ops) == (code, message)
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    assert _describe(admin, name)["retention.ms"].value == "5000"


def test_alter_unknown_and_default_topic(target):
    client = target.raw()
    missing = _name("missing")
    assert _incremental(client, missing, [("retention.ms", SET, "1")]) == (
        UNKNOWN_TOPIC, f"The topic '{missing}' does not exist.")
    assert _incremental(client, "", [("retention.ms", SET, "1")]) == (
        INVALID_REQUEST, "Default topic resources are not allowed.")


def test_alter_configs_replaces_the_topics_configs(target):
    name = _name("alt")
    client = target.raw()
    assert _create(client, name, {"retention.ms": "5000", "cleanup.policy": "compact"})["error_code"] == 0
    body = {"resources": [{"resource_type": TOPIC, "resource_name": name,
                           "configs": [{"name": "segment.ms", "value": "100000"}]}], "validate_only": False}
    r = client.call(ALTER_CONFIGS, 2, body)["responses"][0]
    assert (r["error_code"], r["error_message"]) == (0, None)
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    entries = eventually(lambda: _check(_describe(admin, name), "segment.ms", "100000"))
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert entries["cleanup.policy"].value == "delete"
    body["resources"][0]["configs"] = [{"name": "bogus", "value": "1"}]
    r = client.call(ALTER_CONFIGS, 2, body)["responses"][0]
    assert (r["error_code"], r["error_message"]) == (INVALID_CONFIG, "Unknown topic config name: bogus")


def test_confluent_incremental_alter_configs(target):
    """The stock client's path (librdkafka IncrementalAlterConfigs)."""
    name = _name("rd")
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(15)
    res = ConfigResource("topic", name, incremental_configs=[
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    eventually(lambda: admin.incremental_alter_configs([res])[res].result(10))
    assert eventually(lambda: _check(_describe(admin, name), "retention.ms", "60000"))
    bad = ConfigResource("topic", name, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception) as exc:
        admin.incremental_alter_configs([bad])[bad].result(10)
    assert "INVALID_CONFIG" in str(exc.value) or "Not a number" in str(exc.value)


def test_group_resource_is_described(target):
    client = target.raw()
    r = client.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": GROUP, "resource_name": _name("g"),
                                                          "configuration_keys": None}],
                                          "include_synonyms": True, "include_documentation": False})
    result = r["results"][0]
    assert result["error_code"] == 0
    configs = {c["name"]: c for c in result["configs"]}
    assert int(configs["consumer.session.timeout.ms"]["value"]) > 0
    assert int(configs["consumer.heartbeat.interval.ms"]["value"]) > 0


@gateway_only
def test_max_message_bytes_above_the_store_limit_is_refused(target):
    """Above --max-message-bytes (4 MiB, the default limit) up to the store's ceiling (one 100 MiB
    request frame) is accepted; beyond the ceiling is INVALID_CONFIG."""
    client = target.raw()
    name = _name("big")
    ceiling = 100 << 20
    t = _create(client, name, {"max.message.bytes": str(ceiling + 1)})
    assert t["error_code"] == INVALID_CONFIG and f"no more than {ceiling}" in t["error_message"]
    assert _create(client, name, {"max.message.bytes": str(8 << 20)})["error_code"] == 0
    code, message = _incremental(client, name, [("max.message.bytes", SET, str(ceiling + 1))])
    assert code == INVALID_CONFIG and f"no more than {ceiling}" in message
    assert _incremental(client, name, [("max.message.bytes", SET, str(10 << 20))])[0] == 0


@gateway_only
def test_broker_configs_are_read_only(target):
    client = target.raw()
    own = str(broker_ids()[0])  # the bootstrap's node id (0, or shard 0's 1 under --shards)
    r = client.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": BROKER, "resource_name": own,
                                                          "configuration_keys": ["message.max.bytes"]}],
                                          "include_synonyms": True, "include_documentation": False})
    (entry,) = r["results"][0]["configs"]
    assert entry["value"] == str(4 << 20) and entry["read_only"] and entry["config_source"] == 4
    code, message = _incremental(client, own, [("message.max.bytes", SET, "1")], rtype=BROKER)
    assert code == INVALID_REQUEST and "message.max.bytes" in message
    code, message = _incremental(client, "7", [("message.max.bytes", SET, "1")], rtype=BROKER)
    assert code == INVALID_REQUEST and "Unexpected broker id" in message

