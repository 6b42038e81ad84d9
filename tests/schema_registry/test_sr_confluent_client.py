"""confluent-kafka's SchemaRegistryClient, AvroSerializer and AvroDeserializer against a real gateway
process: framed Avro produced and consumed through the Kafka port, and the client's admin calls."""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import (ConfigCompatibilityLevel, Schema, SchemaReference, SchemaRegistryClient,
                                             ServerConfig)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from codec.schema_registry import unframe
from sr_fixtures import registry_gateway  # noqa: F401 - fixture

USER = json.dumps({"type": "record", "name": "User", "namespace": "t",
                   "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "t",
                      "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                                 {"name": "email", "type": ["null", "string"], "default": None}]})
USER_BROKEN = json.dumps({"type": "record", "name": "User", "namespace": "t",
                          "fields": [{"name": "id", "type": "long"}]})


def test_avro_serde_end_to_end(registry_gateway):
    client = SchemaRegistryClient({"url": registry_gateway.url})
    topic = f"users-{uuid.uuid4().hex[:8]}"
    serialize = AvroSerializer(client, USER)
    ctx = SerializationContext(topic, MessageField.VALUE)
    people = [{"name": f"n{i}", "age": i} for i in range(5)]
    producer = Producer({"bootstrap.servers": registry_gateway.gateway.kafka_bootstrap})
    for p in people:
        producer.produce(topic, value=serialize(p, ctx))
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": registry_gateway.gateway.kafka_bootstrap, "group.id": "g",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    deserialize = AvroDeserializer(client)  # fetches the writer's schema by the frame's id
    got, raw = [], []
    try:
        while len(got) < len(people):
            msg = consumer.poll(10)
            assert msg is not None, "no record within 10 s"
            if msg.error():
                continue
            raw.append(msg.value())
            got.append(deserialize(msg.value(), ctx))
    finally:
        consumer.close()
    assert sorted(got, key=lambda p: p["age"]) == people  # the topic has several partitions
    assert {unframe(v)[0] for v in raw} == {1}  # the id the serializer registered under users-...-value
    assert client.get_subjects() == [f"{topic}-value"]


def test_admin_calls(registry_gateway):
    client = SchemaRegistryClient({"url": registry_gateway.url})
    first = client.register_schema("people-value", Schema(USER, "AVRO"))
    assert client.register_schema("people-value", Schema(USER, "AVRO")) == first
    assert client.register_schema("copy-value", Schema(USER, "AVRO")) == first  # global id reused
    assert client.test_compatibility("people-value", Schema(USER_V2, "AVRO")) is True
    assert client.test_compatibility("people-value", Schema(USER_BROKEN, "AVRO")) is False
    second = client.register_schema("people-value", Schema(USER_V2, "AVRO"))
    assert second == first + 1
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("people-value", Schema(USER_BROKEN, "AVRO"))
    assert refused.value.http_status_code == 409 and refused.value.error_code == 409
    assert client.get_subjects() == ["copy-value", "people-value"]
    assert client.get_versions("people-value") == [1, 2]
    latest = client.get_latest_version("people-value")
    assert (latest.schema_id, latest.version, latest.subject) == (second, 2, "people-value")
    assert client.get_version("people-value", 1).schema_id == first
    found = client.lookup_schema("people-value", Schema(USER, "AVRO"))
    assert (found.schema_id, found.version) == (first, 1)
    assert json.loads(client.get_schema(second).schema_str) == json.loads(USER_V2)
    assert client.set_compatibility("people-value", "FULL") == {"compatibility": "FULL"}
    assert client.get_compatibility("people-value") == "FULL"
    client.set_config(None, ServerConfig(compatibility=ConfigCompatibilityLevel.NONE))
    assert client.get_config().compatibility_level == ConfigCompatibilityLevel.NONE
    # references: a record type of another subject
    address = json.dumps({"type": "record", "name": "Address", "namespace": "t",
                          "fields": [{"name": "city", "type": "string"}]})
    addr_id = client.register_schema("address-value", Schema(address, "AVRO"))
    holder = json.dumps({"type": "record", "name": "Holder", "namespace": "t",
                         "fields": [{"name": "home", "type": "t.Address"}]})
    holder_id = client.register_schema(
        "holder-value", Schema(holder, "AVRO", [SchemaReference("t.Address", "address-value", 1)]))
    assert holder_id == addr_id + 1
    got = client.get_schema(holder_id)
    assert [(r.name, r.subject, r.version) for r in got.references] == [("t.Address", "address-value", 1)]
    with pytest.raises(SchemaRegistryError) as missing:
        client.register_schema("h2-value", Schema(holder, "AVRO", [SchemaReference("t.Address", "none", 1)]))
    assert missing.value.error_code == 42201
    # soft, then permanent delete
    assert client.delete_subject("copy-value") == [1]
    assert client.get_subjects() == ["address-value", "holder-value", "people-value"]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_latest_version("copy-value")
    assert gone.value.error_code == 40401
    assert client.delete_subject("copy-value", permanent=True) == [1]
    assert client.get_schema(first).schema_str == USER.replace(" ", "")  # still under people-value
