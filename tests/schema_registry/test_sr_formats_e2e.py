"""PROTOBUF and JSON end to end: confluent-kafka's Protobuf and JSON serdes through a real gateway.

The Protobuf message classes are protoc-generated modules (grpcio-tools), one importing another, as
an application has them: the serializer registers the import as its own subject and the schema with
a reference; the deserializer fetches both by id in `format=serialized` (base64 descriptors).
"""
from __future__ import annotations

import base64
import importlib
import importlib.resources
import json
import sys
import uuid

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2

from codec.schema_registry import unframe
from sr_fixtures import registry_gateway  # noqa: F401 - fixture

MONEY = 'syntax = "proto3";\npackage e2eshop.common;\nmessage Money { int64 units = 1; string currency = 2; }\n'
ORDER = ('syntax = "proto3";\npackage e2eshop;\nimport "e2eshop/money.proto";\n'
         'message Order { string id = 1; e2eshop.common.Money price = 2; repeated string skus = 3; }\n')


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The protoc-generated Python modules of ORDER and its import, importable for this test module."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("proto")
    (root / "e2eshop").mkdir()
    (root / "e2eshop" / "money.proto").write_text(MONEY)
    (root / "e2eshop" / "order.proto").write_text(ORDER)
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{root}", f"-I{include}", f"--python_out={root}",
                        "e2eshop/money.proto", "e2eshop/order.proto"]) == 0
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("e2eshop.order_pb2"), importlib.import_module("e2eshop.money_pb2")
    finally:
        sys.path.remove(str(root))


def _round_trip(gateway, topic, framed_values, deserialize, ctx):
    producer = Producer({"bootstrap.servers": gateway.kafka_bootstrap})
    for value in framed_values:
        producer.produce(topic, value=value)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": gateway.kafka_bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(framed_values):
            msg = consumer.poll(10)
            assert msg is not None, "no record within 10 s"
            if msg.error():
                continue
            got.append((msg.value(), deserialize(msg.value(), ctx)))
    finally:
        consumer.close()
    return got


def test_protobuf_serde_with_an_import_reference_end_to_end(registry_gateway, generated):
    order_pb2, money_pb2 = generated
    client = SchemaRegistryClient({"url": registry_gateway.url})
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    serialize = ProtobufSerializer(order_pb2.Order, client, {
        "use.deprecated.format": False,
        # the import's subject: the client's default is the import path itself (with a '/')
        "reference.subject.name.strategy": lambda _ctx, dependency: dependency.name.replace("/", "."),
    })
    orders = [order_pb2.Order(id=f"o{i}", price=money_pb2.Money(units=i * 100, currency="EUR"), skus=["a"] * i)
              for i in range(4)]
    framed = [serialize(order, ctx) for order in orders]
    deserialize = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False}, client)
    got = _round_trip(registry_gateway.gateway, topic, framed, deserialize, ctx)
    assert sorted((message for _raw, message in got), key=lambda m: m.id) == orders  # partitions interleave
    schema_id = unframe(got[0][0])[0]
    registered = client.get_schema(schema_id)
    assert registered.schema_type == "PROTOBUF"
    assert [(r.name, r.subject) for r in registered.references] == [("e2eshop/money.proto", "e2eshop.money.proto")]
    assert 'import "e2eshop/money.proto";' in registered.schema_str
    assert set(client.get_subjects()) >= {f"{topic}-value", "e2eshop.money.proto"}
    serialized = httpx.get(f"{registry_gateway.url}/schemas/ids/{schema_id}", params={"format": "serialized"}).json()
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized["schema"]))
    assert list(descriptor.dependency) == ["e2eshop/money.proto"] and descriptor.message_type[0].name == "Order"

    # the same schema as .proto text is the same schema: same id; a changed field type is refused
    text_id = client.register_schema(f"{topic}-value", Schema(ORDER, "PROTOBUF", registered.references))
    assert text_id == schema_id
    broken = ORDER.replace("string id = 1;", "int64 id = 1;")
    assert not client.test_compatibility(f"{topic}-value", Schema(broken, "PROTOBUF", registered.references))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(f"{topic}-value", Schema(broken, "PROTOBUF", registered.references))
    assert refused.value.http_status_code == 409


PERSON = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
          "additionalProperties": False, "required": ["name"],
          "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}}


def test_json_serde_end_to_end_and_content_model_rules(registry_gateway):
    client = SchemaRegistryClient({"url": registry_gateway.url})
    topic = f"people-{uuid.uuid4().hex[:8]}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    serialize = JSONSerializer(json.dumps(PERSON), client)
    people = [{"name": f"n{i}", "age": i} for i in range(4)]
    framed = [serialize(person, ctx) for person in people]
    deserialize = JSONDeserializer(None, schema_registry_client=client)  # the writer's schema by id
    got = _round_trip(registry_gateway.gateway, topic, framed, deserialize, ctx)
    assert sorted((person for _raw, person in got), key=lambda p: p["name"]) == people
    registered = client.get_schema(unframe(got[0][0])[0])
    assert registered.schema_type == "JSON" and json.loads(registered.schema_str)["title"] == "Person"

    subject = f"{topic}-value"
    # closed content model: a new optional property is compatible, removing one is not
    extended = dict(PERSON, properties=dict(PERSON["properties"], email={"type": "string"}))
    assert client.test_compatibility(subject, Schema(json.dumps(extended), "JSON"))
    reduced = dict(PERSON, properties={"name": {"type": "string"}})
    assert not client.test_compatibility(subject, Schema(json.dumps(reduced), "JSON"))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(json.dumps(reduced), "JSON"))
    assert refused.value.http_status_code == 409
    with pytest.raises(SchemaRegistryError) as invalid:
        client.register_schema(subject, Schema('{"type": "strng"}', "JSON"))
    assert invalid.value.http_status_code == 422


def test_protobuf_import_registers_under_its_path_as_subject(registry_gateway, generated):
    order_pb2, _money_pb2 = generated
    client = SchemaRegistryClient({"url": registry_gateway.url})
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    serialize = ProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False})
    serialize(order_pb2.Order(id="x"), SerializationContext(topic, MessageField.VALUE))
    assert "e2eshop/money.proto" in client.get_subjects()
