"""`_schemas` as Kafka clients see it: the registry's records in Confluent's key/value JSON, read back
with a plain Consumer; and records a Confluent-style registry instance produces (with a plain Producer)
are applied by the gateway's registry at its next request."""
from __future__ import annotations

import json

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition

from sr_fixtures import registry_gateway  # noqa: F401 - fixture

SCHEMA = json.dumps({"type": "record", "name": "U", "fields": [{"name": "a", "type": "int"}]})


def read_all(bootstrap: str, count: int) -> list[tuple[dict, dict | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition("_schemas", 0, 0)])
    out = []
    try:
        while len(out) < count:
            msg = consumer.poll(10)
            assert msg is not None, f"only {len(out)} records"
            if not msg.error():
                out.append((json.loads(msg.key()), json.loads(msg.value()) if msg.value() else None))
    finally:
        consumer.close()
    return out


def test_records_are_confluents_and_foreign_ones_apply(registry_gateway):
    bootstrap = registry_gateway.gateway.kafka_bootstrap
    with httpx.Client(base_url=registry_gateway.url, timeout=10) as http:
        assert http.post("/subjects/t-value/versions", json={"schema": SCHEMA}).json()["id"] == 1
        http.put("/config/t-value", json={"compatibility": "FULL"})
        records = read_all(bootstrap, 2)
        assert records == [
            ({"keytype": "SCHEMA", "subject": "t-value", "version": 1, "magic": 1},
             {"subject": "t-value", "version": 1, "id": 1, "schema": SCHEMA.replace(" ", ""), "deleted": False}),
            ({"keytype": "CONFIG", "subject": "t-value", "magic": 0}, {"compatibilityLevel": "FULL"})]
        # what another registry instance writes (Karapace's key order), through the Kafka port
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("_schemas", key=json.dumps({"subject": "x", "version": 1, "magic": 1, "keytype": "SCHEMA"}),
                         value=json.dumps({"subject": "x", "version": 1, "id": 7, "schema": '"string"',
                                           "deleted": False}))
        producer.produce("_schemas", key=b"garbage", value=b"{")
        assert producer.flush(20) == 0
        assert http.get("/subjects/x/versions/1").json() == {"subject": "x", "version": 1, "id": 7,
                                                              "schema": '"string"'}
        assert http.post("/subjects/y/versions", json={"schema": '"long"'}).json()["id"] == 8  # after 7
