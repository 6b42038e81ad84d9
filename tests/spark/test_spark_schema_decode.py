"""spark.pipelines.schema_decode on a real gateway with --schema-registry-port: records framed by
confluent-kafka's AvroSerializer under two versions of a schema are decoded by Spark's from_avro with
each id's writer schema from the registry into the latest version, filtered, and written back as
framed Avro that confluent-kafka's AvroDeserializer reads; the target topic validates its records
(confluent.value.schema.validation=true), so the frames Spark wrote are checked by the gateway too."""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from gateway_process import free_port, wait_port
from spark_helpers import AGAINST_KAFKA, create_topic

V1 = {"type": "record", "name": "User", "namespace": "t",
      "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "email", "type": ["null", "string"], "default": None}]}

pytestmark = pytest.mark.skipif(AGAINST_KAFKA, reason="needs the gateway's schema registry")


@pytest.fixture
def registry_gateway(gateway_factory):
    port = free_port()
    g = gateway_factory(extra_args=["--schema-registry-port", str(port)])
    wait_port(port)
    g.registry_url = f"http://127.0.0.1:{port}"
    return g


def _produce(g, topic: str, schema: dict, people: list[dict]) -> None:
    serialize = AvroSerializer(SchemaRegistryClient({"url": g.registry_url}), json.dumps(schema))
    producer = Producer({"bootstrap.servers": g.kafka_bootstrap})
    for p in people:
        producer.produce(topic, key=p["name"].encode(), value=serialize(p, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(20) == 0


def _consume(g, topic: str, want: int) -> list[dict]:
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": g.registry_url}))
    c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    try:
        for _ in range(60):
            msg = c.poll(1)
            if msg is not None and not msg.error():
                got.append(deserialize(msg.value(), SerializationContext(topic, MessageField.VALUE)))
            if len(got) >= want:
                break
    finally:
        c.close()
    return got


def test_decode_by_schema_id_filter_and_write_framed_avro(spark, registry_gateway, capsys):
    from spark.pipelines import schema_decode
    g = registry_gateway
    source, target = f"users-{uuid.uuid4().hex[:6]}", f"adults-{uuid.uuid4().hex[:6]}"
    create_topic(g.kafka_bootstrap, source)
    create_topic(g.kafka_bootstrap, target, configs={"confluent.value.schema.validation": "true"})
    _produce(g, source, V1, [{"name": "ann", "age": 40}, {"name": "bob", "age": 12}])
    _produce(g, source, V2, [{"name": "cy", "age": 30, "email": "cy@example.com"},
                             {"name": "dee", "age": 9, "email": None}])
    schema_decode.run(["--bootstrap", g.kafka_bootstrap, "--registry", g.registry_url, "--topic", source,
                       "--target", target, "--where", "age >= 18"])
    out = capsys.readouterr().out
    assert "decoded 4 records" in out and "schema ids [1, 2]" in out and "wrote 2" in out, out
    got = sorted(_consume(g, target, 2), key=lambda p: p["name"])
    assert got == [{"name": "ann", "age": 40, "email": None}, {"name": "cy", "age": 30, "email": "cy@example.com"}]
