"""Schema validation at the broker, Kafka side (issue 23): topics with `confluent.*.schema.validation`
refuse records not framed with an id registered under their subject, with INVALID_RECORD and one
KIP-467 `record_errors` entry per bad record; nothing of a refused batch is stored. Real gateway
processes (--schema-registry-port), confluent-kafka's AvroSerializer, kafka-python and raw Produce
requests. (Apache Kafka has no such configs: Confluent Server's names, checked against its docs.)"""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from codec.kafka import records
from codec.schema_registry import frame
from sr_fixtures import registry_gateway  # noqa: F401 - fixture
from tests.kafka.kafka_raw import RawClient

PRODUCE, INVALID_RECORD, INVALID_CONFIG = 0, 87, 40
USER = json.dumps({"type": "record", "name": "User", "namespace": "t",
                   "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "t", "fields": [{"name": "n", "type": "long"}]})


def _topic(gw, configs: dict) -> str:
    name = f"v-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": gw.gateway.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(20)
    return name


def _send(gw, topic: str, values: list, keys: list | None = None, linger_ms: int = 0) -> list:
    """Produce with confluent-kafka; the delivery error (or None) of each record, in order."""
    producer = Producer({"bootstrap.servers": gw.gateway.kafka_bootstrap, "linger.ms": linger_ms,
                         "message.send.max.retries": 0})
    errors, reported = [None] * len(values), set()

    def report(i):
        def done(err, _msg):
            errors[i] = err
            reported.add(i)
        return done
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=(keys or [None] * len(values))[i], on_delivery=report(i))
    assert producer.flush(30) == 0 and len(reported) == len(values)
    return errors


def _stored(gw, topic: str) -> int:
    c = Consumer({"bootstrap.servers": gw.gateway.kafka_bootstrap, "group.id": "wm"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()
    return high - low


def _raw_produce(gw, topic: str, values: list) -> dict:
    batch = records.build_batch([(0, None, v, []) for v in values])
    c = RawClient(gw.gateway.kafka_bootstrap)
    try:
        body = {"acks": -1, "timeout_ms": 5000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
        return c.call(PRODUCE, 9, body)["responses"][0]["partition_responses"][0]
    finally:
        c.close()


def test_value_validation_refuses_unframed_unknown_and_foreign_ids(registry_gateway):
    gw = registry_gateway
    client = SchemaRegistryClient({"url": gw.url})
    topic = _topic(gw, {"confluent.value.schema.validation": "true"})
    ctx = SerializationContext(topic, MessageField.VALUE)
    serialize = AvroSerializer(client, USER)
    good = [serialize({"name": f"n{i}", "age": i}, ctx) for i in range(3)]
    assert _send(gw, topic, good) == [None, None, None]
    foreign = client.register_schema("elsewhere-value", Schema(ORDER, "AVRO"))  # an id, but not for this subject
    refused = _send(gw, topic, [b"plain text", frame(999, b"\x02a\x02"), frame(foreign, b"\x02")])
    assert [e.code() for e in refused] == [KafkaError.INVALID_RECORD] * 3
    assert _stored(gw, topic) == 3

    answer = _raw_produce(gw, topic, [good[0], good[1], b"x", good[2], frame(foreign, b"\x02")])
    assert answer["error_code"] == INVALID_RECORD
    assert [e["batch_index"] for e in answer["record_errors"]] == [2, 4]
    messages = [e["batch_index_error_message"] for e in answer["record_errors"]]
    assert "not framed with a schema id" in messages[0]
    assert f"schema id {foreign} is not registered under subject {topic}-value" in messages[1]
    assert _stored(gw, topic) == 3  # the good records of the batch were not stored either


def test_a_batch_of_five_with_one_bad_record_stores_none(registry_gateway):
    gw = registry_gateway
    client = SchemaRegistryClient({"url": gw.url})
    topic = _topic(gw, {"confluent.value.schema.validation": "true"})
    serialize = AvroSerializer(client, USER)
    values = [serialize({"name": "a", "age": i}, SerializationContext(topic, MessageField.VALUE)) for i in range(5)]
    values[3] = b"\x01" + values[3][1:]  # another magic byte
    errors = _send(gw, topic, values, linger_ms=500)  # one batch
    assert all(e is not None for e in errors), errors
    assert errors[3].code() == KafkaError.INVALID_RECORD
    assert _stored(gw, topic) == 0


def test_kafka_python_sees_invalid_record(registry_gateway):
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError
    gw = registry_gateway
    topic = _topic(gw, {"confluent.value.schema.validation": "true"})
    producer = KafkaProducer(bootstrap_servers=gw.gateway.kafka_bootstrap, retries=0)
    try:
        with pytest.raises(InvalidRecordError):
            producer.send(topic, b"not framed").get(timeout=20)
    finally:
        producer.close()
    assert _stored(gw, topic) == 0


def test_full_level_decodes_the_payload(registry_gateway):
    gw = registry_gateway
    client = SchemaRegistryClient({"url": gw.url})
    topic = _topic(gw, {"confluent.value.schema.validation": "full"})
    serialize = AvroSerializer(client, USER)
    good = serialize({"name": "alice", "age": 30}, SerializationContext(topic, MessageField.VALUE))
    assert _send(gw, topic, [good]) == [None]
    truncated = good[:-3]  # framed with the right id, payload cut short
    answer = _raw_produce(gw, topic, [truncated])
    assert answer["error_code"] == INVALID_RECORD
    assert "does not decode with schema id" in answer["record_errors"][0]["batch_index_error_message"]
    assert _stored(gw, topic) == 1

    id_only = _topic(gw, {"confluent.value.schema.validation": "true"})  # the id level lets it through
    assert _raw_produce(gw, id_only, [frame(client.register_schema(f"{id_only}-value", Schema(USER, "AVRO")),
                                            truncated[5:])])["error_code"] == 0


def test_record_name_strategy_and_key_validation(registry_gateway):
    gw = registry_gateway
    client = SchemaRegistryClient({"url": gw.url})
    topic = _topic(gw, {"confluent.value.schema.validation": "true",
                        "confluent.value.subject.name.strategy":
                            "io.confluent.kafka.serializers.subject.RecordNameStrategy",
                        "confluent.key.schema.validation": "true",
                        "confluent.key.subject.name.strategy": "TopicRecordNameStrategy"})
    from confluent_kafka.schema_registry import record_subject_name_strategy, topic_record_subject_name_strategy
    value_serializer = AvroSerializer(client, USER, conf={"subject.name.strategy": record_subject_name_strategy})
    key_serializer = AvroSerializer(client, ORDER, conf={"subject.name.strategy": topic_record_subject_name_strategy})
    value = value_serializer({"name": "a", "age": 1}, SerializationContext(topic, MessageField.VALUE))
    key = key_serializer({"n": 7}, SerializationContext(topic, MessageField.KEY))
    assert client.get_subjects() == sorted([f"{topic}-t.Order", "t.User"])
    assert _send(gw, topic, [value, value], keys=[key, None]) == [None, None]  # a null key passes
    [refused] = _send(gw, topic, [value], keys=[b"raw key"])
    assert refused.code() == KafkaError.INVALID_RECORD
    assert _stored(gw, topic) == 2
    topic_named = AvroSerializer(client, USER)({"name": "b", "age": 2}, SerializationContext(topic, MessageField.VALUE))
    # registered under <topic>-value too: the same schema, so the same id, which t.User has: accepted
    assert _send(gw, topic, [topic_named]) == [None]
    other = client.register_schema("elsewhere", Schema(ORDER.replace("Order", "Other"), "AVRO"))
    [refused] = _send(gw, topic, [frame(other, b"\x02")], keys=[key])
    assert refused.code() == KafkaError.INVALID_RECORD  # its record name's subject t.Other does not have it
    assert _raw_produce(gw, topic, [frame(other, b"\x02")])["record_errors"][0]["batch_index_error_message"] == \
        f"value schema id {other} is not registered under subject t.Other"
    assert _stored(gw, topic) == 3


def test_configs_are_validated_described_and_need_the_registry(registry_gateway, gateway_factory):
    gw = registry_gateway
    admin = AdminClient({"bootstrap.servers": gw.gateway.kafka_bootstrap})
    name = f"v-{uuid.uuid4().hex[:8]}"
    bad = admin.create_topics([NewTopic(name, 1, 1, config={"confluent.value.schema.validation": "yes"})])[name]
    with pytest.raises(Exception) as refused:
        bad.result(20)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    topic = _topic(gw, {"confluent.value.schema.validation": "FULL",
                        "confluent.value.subject.name.strategy": "TopicRecordNameStrategy"})
    [described] = admin.describe_configs([ConfigResource("topic", topic)]).values()
    entries = described.result(20)
    assert entries["confluent.value.schema.validation"].value == "FULL"
    assert entries["confluent.key.schema.validation"].value == "false"
    assert entries["confluent.key.subject.name.strategy"].value == \
        "io.confluent.kafka.serializers.subject.TopicNameStrategy"
    bad = admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[ConfigEntry(
        "confluent.value.subject.name.strategy", "MyStrategy", incremental_operation=AlterConfigOpType.SET)])])
    with pytest.raises(Exception):
        list(bad.values())[0].result(20)

    plain = gateway_factory(name="plain")  # no --schema-registry-port: no validation to offer
    admin = AdminClient({"bootstrap.servers": plain.kafka_bootstrap})
    fut = admin.create_topics([NewTopic(name, 1, 1, config={"confluent.value.schema.validation": "true"})])[name]
    with pytest.raises(Exception) as refused:
        fut.result(20)
    assert "schema registry" in str(refused.value)


def test_full_level_with_json_schema(registry_gateway):
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    gw = registry_gateway
    client = SchemaRegistryClient({"url": gw.url})
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading", "type": "object",
                         "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]})
    topic = _topic(gw, {"confluent.value.schema.validation": "full"})
    good = JSONSerializer(schema, client)({"celsius": 21.5}, SerializationContext(topic, MessageField.VALUE))
    assert _send(gw, topic, [good]) == [None]
    schema_id = int.from_bytes(good[1:5], "big")
    answer = _raw_produce(gw, topic, [frame(schema_id, b'{"celsius": "warm"}'), frame(schema_id, b"{not json")])
    assert answer["error_code"] == INVALID_RECORD
    assert [e["batch_index"] for e in answer["record_errors"]] == [0, 1]
    assert all("does not decode with schema id" in e["batch_index_error_message"] for e in answer["record_errors"])
    assert _stored(gw, topic) == 1
