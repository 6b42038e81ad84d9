"""Schema modes: Avro values (confluent-kafka's AvroSerializer against the gateway's registry) become
typed columns; a compatible new version evolves the table's schema; what does not decode goes to the
`<topic>~dlq` table with its reason, or nowhere with iceberg.invalid.record.action=drop."""
from __future__ import annotations

import json
import time

from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import COMMIT_MS, create_table_topic, duckdb_connection, free_port, read_rows, rest_catalog, wait_rows

USER = json.dumps({"type": "record", "name": "User", "namespace": "t",
                   "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "t",
                      "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                                 {"name": "email", "type": ["null", "string"], "default": None}]})


def _registry_gateway(table_gateway):
    port = free_port()
    gw = table_gateway(["--schema-registry-port", str(port)])
    return gw, SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})


def test_avro_values_as_typed_columns_with_evolution_and_dlq(table_gateway):
    gw, client = _registry_gateway(table_gateway)
    create_table_topic(gw, "users", partitions=1, iceberg_mode="value_schema_id_prefix")
    ctx = SerializationContext("users", MessageField.VALUE)
    producer = Producer({"bootstrap.servers": gw.kafka_bootstrap})
    v1 = AvroSerializer(client, USER)
    for i in range(3):
        producer.produce("users", key=b"u%d" % i, value=v1({"name": f"n{i}", "age": i}, ctx), partition=0)
    producer.produce("users", value=b"not avro at all", partition=0)  # offset 3: to the DLQ table
    assert producer.flush(20) == 0
    wait_rows(gw, "users", 3)
    v2 = AvroSerializer(client, USER_V2)  # a compatible new version: the table gains the email column
    producer.produce("users", value=v2({"name": "n9", "age": 9, "email": "n9@example.com"}, ctx), partition=0)
    assert producer.flush(20) == 0
    rows = wait_rows(gw, "users", 4)
    values = sorted((r["offset"], r["value"]["name"], r["value"]["age"], r["value"].get("email")) for r in rows)
    assert values == [(0, "n0", 0, None), (1, "n1", 1, None), (2, "n2", 2, None), (4, "n9", 9, "n9@example.com")]
    dlq = wait_rows(gw, "users~dlq", 1)
    assert [(r["offset"], r["value"]) for r in dlq] == [(3, b"not avro at all")]
    assert "schema id prefix" in dlq[0]["reason"]
    table = rest_catalog(gw).load_table(("rocketgate", "users"))
    value_fields = [f.name for f in table.schema().find_field("value").field_type.fields]
    assert value_fields == ["name", "age", "email"]
    con = duckdb_connection(gw)
    assert con.execute('SELECT value.name, value.email FROM rg.rocketgate.users WHERE "offset" = 4').fetchall() == \
        [("n9", "n9@example.com")]
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    assert len(read_rows(gw, "users")) == 4 and len(read_rows(gw, "users~dlq")) == 1


def test_latest_schema_mode_and_drop(table_gateway):
    gw, client = _registry_gateway(table_gateway)
    client.register_schema("plain-value", Schema(USER, "AVRO"))
    create_table_topic(gw, "plain", partitions=1, iceberg_mode="value_schema_latest",
                       iceberg_invalid_record_action="drop")
    ctx = SerializationContext("plain", MessageField.VALUE)
    framed = AvroSerializer(client, USER)({"name": "framed", "age": 1}, ctx)
    producer = Producer({"bootstrap.servers": gw.kafka_bootstrap})
    producer.produce("plain", value=framed, partition=0)
    producer.produce("plain", value=framed[5:], partition=0)  # bare Avro: the latest schema reads it too
    producer.produce("plain", value=b"\xff", partition=0)  # dropped
    producer.produce("plain", value=framed, partition=0)
    assert producer.flush(20) == 0
    rows = wait_rows(gw, "plain", 3)
    time.sleep(int(COMMIT_MS) * 3 / 1000)
    rows = read_rows(gw, "plain")
    assert sorted(r["offset"] for r in rows) == [0, 1, 3]
    assert read_rows(gw, "plain~dlq") == []


def test_a_change_iceberg_cannot_evolve_to_goes_to_the_dlq(table_gateway):
    gw, client = _registry_gateway(table_gateway)
    client.set_compatibility("users-value", "NONE")
    create_table_topic(gw, "users", partitions=1, iceberg_mode="value_schema_id_prefix")
    ctx = SerializationContext("users", MessageField.VALUE)
    producer = Producer({"bootstrap.servers": gw.kafka_bootstrap})
    producer.produce("users", value=AvroSerializer(client, USER)({"name": "a", "age": 1}, ctx), partition=0)
    assert producer.flush(20) == 0
    wait_rows(gw, "users", 1)
    age_text = json.dumps({"type": "record", "name": "User", "namespace": "t",
                           "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "string"}]})
    producer.produce("users", value=AvroSerializer(client, age_text)({"name": "b", "age": "old"}, ctx), partition=0)
    producer.produce("users", value=AvroSerializer(client, USER)({"name": "c", "age": 3}, ctx), partition=0)
    assert producer.flush(20) == 0
    rows = wait_rows(gw, "users", 2)
    dlq = wait_rows(gw, "users~dlq", 1)
    assert sorted((r["offset"], r["value"]["name"]) for r in rows) == [(0, "a"), (2, "c")]
    assert dlq[0]["offset"] == 1 and "cannot evolve" in dlq[0]["reason"]
