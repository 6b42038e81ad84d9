"""spark/pipelines/schema_avro against a real gateway with --schema-registry-port: values framed by
confluent-kafka's AvroSerializer under two schema versions (two ids), one unframed value; the pipeline
decodes each id with its own from_avro, filters on a decoded field and writes framed Avro that
confluent-kafka's AvroDeserializer reads back. With SPARK_TEST_BROKER=kafka the records go through a real
Apache Kafka broker while the registry stays on the gateway."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from spark_helpers import EXTERNAL, AGAINST_KAFKA, consume_all, create_topic, produce

from codec.schema_registry import unframe
from gateway_process import free_port, wait_port
from spark.pipelines import schema_avro

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(bool(EXTERNAL), reason="starts its own gateway for the schema registry")]

USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "t",
                      "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "t",
                      "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                                 {"name": "email", "type": ["null", "string"], "default": None}]})


@pytest.fixture
def registry_gateway(gateway_factory, kafka_broker):
    """(Kafka bootstrap, registry URL): the gateway's own, or Apache Kafka's with SPARK_TEST_BROKER=kafka."""
    port = free_port()
    g = gateway_factory(extra_args=["--schema-registry-port", str(port)])
    wait_port(port)
    return kafka_broker.bootstrap if AGAINST_KAFKA else g.kafka_bootstrap, f"http://127.0.0.1:{port}"


def test_decode_by_id_filter_and_write_framed(spark, registry_gateway, topic_name, capsys):
    bootstrap, url = registry_gateway
    topic, target = topic_name("users"), topic_name("adults")
    create_topic(bootstrap, topic, partitions=2)
    client = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    old, new = AvroSerializer(client, USER_V1), AvroSerializer(client, USER_V2)
    values = [old({"name": f"old{i}", "age": 15 + i}, ctx) for i in range(4)]
    values += [new({"name": f"new{i}", "age": 16 + i, "email": f"e{i}" if i % 2 else None}, ctx) for i in range(4)]
    values.append(b"not framed")
    produce(bootstrap, topic, [{"key": f"k{i}".encode(), "value": v, "partition": i % 2}
                               for i, v in enumerate(values)])
    assert sorted({unframe(v)[0] for v in values[:-1]}) == [1, 2]

    schema_avro.run(["--bootstrap", bootstrap, "--registry", url, "--topic", topic, "--target", target,
                     "--where", "age >= 17"])
    line = capsys.readouterr().out
    assert f"decoded 8 framed rows of schema ids [1, 2] with {topic}-value v2, skipped 1 unframed, " \
           f"wrote 5 rows with schema id 2 to {target}" in line

    records = consume_all(bootstrap, target)
    assert {unframe(r.value)[0] for r in records} == {2}  # the target subject's schema is v2's id
    assert client.get_latest_version(f"{target}-value").schema_id == 2
    read = AvroDeserializer(client)
    got = sorted(((r.key.decode(), read(r.value, SerializationContext(target, MessageField.VALUE)))
                  for r in records), key=lambda kv: kv[0])
    assert got == [("k2", {"name": "old2", "age": 17, "email": None}),
                   ("k3", {"name": "old3", "age": 18, "email": None}),
                   ("k5", {"name": "new1", "age": 17, "email": "e1"}),
                   ("k6", {"name": "new2", "age": 18, "email": None}),
                   ("k7", {"name": "new3", "age": 19, "email": "e3"})]


def test_unreachable_registry_is_one_error_line():
    """Checked before Spark starts: one `error:` line, exit status 2."""
    dead = free_port()
    out = subprocess.run([sys.executable, "-m", "spark.pipelines.schema_avro", "--bootstrap", "127.0.0.1:1",
                          "--registry", f"http://127.0.0.1:{dead}", "--topic", "t", "--target", "u"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: schema registry at http://127.0.0.1:{dead} unreachable: " \
                                 "<urlopen error [Errno 111] Connection refused>"
