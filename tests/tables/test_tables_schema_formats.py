"""Schema modes with PROTOBUF and JSON Schema values (confluent-kafka's serializers against the gateway's
registry): typed value columns, read back through pyiceberg and DuckDB; a payload the schema refuses
goes to the DLQ table."""
from __future__ import annotations

import importlib
import importlib.resources
import json
import sys

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import create_table_topic, duckdb_connection, free_port, wait_rows

ORDER = ('syntax = "proto3";\npackage tshop;\n'
         'message Money { int64 units = 1; string currency = 2; }\n'
         'enum Kind { KIND_UNSET = 0; RETAIL = 1; WHOLESALE = 2; }\n'
         'message Order { string id = 1; Money price = 2; repeated string skus = 3; map<string, int32> qty = 4; '
         'Kind kind = 5; bytes note = 6; }\n')
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                           "score": {"type": ["number", "null"]},
                                           "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["name"]}


@pytest.fixture(scope="module")
def order_pb2(tmp_path_factory):
    from grpc_tools import protoc
    root = tmp_path_factory.mktemp("proto")
    (root / "tshop").mkdir()
    (root / "tshop" / "order.proto").write_text(ORDER)
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{root}", f"-I{include}", f"--python_out={root}", "tshop/order.proto"]) == 0
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("tshop.order_pb2")
    finally:
        sys.path.remove(str(root))


def _gateway(table_gateway):
    port = free_port()
    return table_gateway(["--schema-registry-port", str(port)]), SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})


def test_protobuf_values(table_gateway, order_pb2):
    gw, client = _gateway(table_gateway)
    create_table_topic(gw, "orders", partitions=1, iceberg_mode="value_schema_id_prefix")
    ctx = SerializationContext("orders", MessageField.VALUE)
    serialize = ProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False})
    producer = Producer({"bootstrap.servers": gw.kafka_bootstrap})
    producer.produce("orders", value=serialize(order_pb2.Order(
        id="o1", price=order_pb2.Money(units=250, currency="EUR"), skus=["a", "b"], qty={"a": 2},
        kind=order_pb2.WHOLESALE, note=b"\x00\x01"), ctx), partition=0)
    producer.produce("orders", value=serialize(order_pb2.Order(id="o2"), ctx), partition=0)
    producer.produce("orders", value=serialize(order_pb2.Order(id="o3"), ctx)[:6] + b"\xff\xff", partition=0)
    assert producer.flush(20) == 0
    rows = sorted(wait_rows(gw, "orders", 2), key=lambda r: r["offset"])
    first, second = rows[0]["value"], rows[1]["value"]
    assert (first["id"], first["price"], first["skus"], first["qty"], first["kind"], first["note"]) == \
        ("o1", {"units": 250, "currency": "EUR"}, ["a", "b"], [("a", 2)], "WHOLESALE", b"\x00\x01")
    assert (second["id"], second["price"], second["kind"]) == ("o2", None, "KIND_UNSET")
    dlq = wait_rows(gw, "orders~dlq", 1)
    assert dlq[0]["offset"] == 2 and ("decode" in dlq[0]["reason"] or "message index" in dlq[0]["reason"])
    con = duckdb_connection(gw)
    assert con.execute('SELECT value.price.units FROM rg.rocketgate.orders WHERE "offset" = 0').fetchall() == [(250,)]


def test_json_schema_values(table_gateway):
    gw, client = _gateway(table_gateway)
    create_table_topic(gw, "people", partitions=1, iceberg_mode="value_schema_id_prefix")
    ctx = SerializationContext("people", MessageField.VALUE)
    serialize = JSONSerializer(json.dumps(PERSON), client)
    producer = Producer({"bootstrap.servers": gw.kafka_bootstrap})
    producer.produce("people", value=serialize({"name": "ann", "age": 41, "score": 2, "tags": ["x"], "extra": 1}, ctx),
                     partition=0)
    producer.produce("people", value=serialize({"name": "bob"}, ctx), partition=0)
    good = serialize({"name": "eve"}, ctx)
    producer.produce("people", value=good[:5] + b'{"age": 3}', partition=0)  # no name: the schema refuses it
    assert producer.flush(20) == 0
    rows = sorted(wait_rows(gw, "people", 2), key=lambda r: r["offset"])
    assert [r["value"] for r in rows] == [{"name": "ann", "age": 41, "score": 2.0, "tags": ["x"]},
                                          {"name": "bob", "age": None, "score": None, "tags": None}]
    dlq = wait_rows(gw, "people~dlq", 1)
    assert dlq[0]["offset"] == 2 and "name" in dlq[0]["reason"]
