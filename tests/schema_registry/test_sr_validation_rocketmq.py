"""Schema validation at the broker, RocketMQ side (issue 23): a topic whose attributes set
`confluent.value.schema.validation` refuses message bodies not framed with an id registered under
its subject, over remoting (SEND_MESSAGE v1 and v2, batches: MESSAGE_ILLEGAL with a remark) and gRPC
(SendMessage: BAD_REQUEST); nothing is stored. Refusals are counted per protocol and topic in
/metrics. The repo's native client, Apache RocketMQ's Python gRPC SDK, confluent-kafka's serializer."""
from __future__ import annotations

import json
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from client import Admin, Message, MessageQueue, MQBrokerError, Producer
from codec.schema_registry import frame
from gateway_process import free_port, wait_port
from tests.grpc.grpc_sdk import GrpcGateway, config, message

rocketmq = pytest.importorskip("rocketmq")

MESSAGE_ILLEGAL, INVALID_PARAMETER = 13, 29
NOTE = json.dumps({"type": "record", "name": "Note", "namespace": "t", "fields": [{"name": "text", "type": "string"}]})
VALIDATED = {"confluent.value.schema.validation": "full"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    registry, http = free_port(), free_port()
    g = GrpcGateway(str(tmp_path_factory.mktemp("sr-rmq") / "data"),
                    ["--schema-registry-port", str(registry), "--http-port", str(http)]).start()
    wait_port(registry)
    g.registry_url, g.http = f"http://127.0.0.1:{registry}", f"127.0.0.1:{http}"
    yield g
    g.stop()


@pytest.fixture(scope="module")
def admin(gw):
    a = Admin(gw.namesrv).start()
    yield a
    a.shutdown()


def _topic(admin, attributes: dict) -> str:
    name = f"rv-{uuid.uuid4().hex[:8]}"
    admin.create_topic(name, 1, attributes=attributes)
    return name


def _note(gw, topic: str, text: str) -> bytes:
    serialize = AvroSerializer(SchemaRegistryClient({"url": gw.registry_url}), NOTE)
    return serialize({"text": text}, SerializationContext(topic, MessageField.VALUE))


def _stored(admin, topic: str) -> int:
    return admin.max_offset(MessageQueue(topic, "broker-a", 0))


def _refused_over_remoting(producer, msg, batch: bool = False) -> MQBrokerError:
    with pytest.raises(MQBrokerError) as refused:
        producer.send_batch(msg) if batch else producer.send(msg)
    return refused.value


@pytest.mark.parametrize("smart_header", [True, False], ids=["v2-header", "v1-header"])
def test_remoting_send_refused_with_message_illegal(gw, admin, smart_header):
    topic = _topic(admin, VALIDATED)
    good = _note(gw, topic, "hello")
    producer = Producer(f"pg-{uuid.uuid4().hex[:6]}", gw.namesrv, smart_header=smart_header, retry_times=0).start()
    try:
        producer.send(Message(topic, good))
        producer.send(Message(topic, _note(gw, topic, "x" * 6000)))  # compressed by the client (> 4 KiB): inflated
        refused = _refused_over_remoting(producer, Message(topic, b"plain text"))
        assert refused.code == MESSAGE_ILLEGAL
        assert "value is not framed with a schema id" in refused.remark and topic in refused.remark
        refused = _refused_over_remoting(producer, Message(topic, frame(12345, b"\x02a")))
        assert "schema id 12345 is not registered" in refused.remark
        refused = _refused_over_remoting(producer, Message(topic, good[:-2]))  # full level: truncated payload
        assert "does not decode with schema id" in refused.remark
        batch = [Message(topic, good)] * 4 + [Message(topic, b"x")]
        refused = _refused_over_remoting(producer, batch, batch=True)
        assert refused.code == MESSAGE_ILLEGAL and "refused 1 of 5 message(s); message 4:" in refused.remark
    finally:
        producer.shutdown()
    assert _stored(admin, topic) == 2


def test_topic_attributes_are_checked(gw, admin):
    with pytest.raises(MQBrokerError) as refused:
        _topic(admin, {"confluent.value.schema.validation": "maybe"})
    assert refused.value.code == INVALID_PARAMETER
    assert "confluent.value.schema.validation" in refused.value.remark


def test_grpc_send_refused_with_bad_request(gw, admin):
    from rocketmq import Producer as GrpcProducer
    topic = _topic(admin, VALIDATED)
    good = _note(gw, topic, "grpc")
    producer = GrpcProducer(config(gw.endpoints), (topic,))
    producer.startup()
    try:
        producer.send(message(topic, good))
        with pytest.raises(Exception) as refused:  # noqa: PT011 - the SDK raises its own exception types
            producer.send(message(topic, b"not framed"))
        assert "40000" in str(refused.value) or "BAD_REQUEST" in str(refused.value), refused.value
        assert "value is not framed with a schema id" in str(refused.value)
    finally:
        producer.shutdown()
    assert _stored(admin, topic) == 1


def test_refusals_are_counted_per_topic_in_metrics(gw, admin):
    topic = _topic(admin, VALIDATED)
    producer = Producer(f"pg-{uuid.uuid4().hex[:6]}", gw.namesrv, retry_times=0).start()
    try:
        _refused_over_remoting(producer, [Message(topic, b"a"), Message(topic, b"b")], batch=True)
    finally:
        producer.shutdown()
    kafka = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "message.send.max.retries": 0})
    kafka.produce(topic, value=b"unframed")
    kafka.flush(20)
    with urllib.request.urlopen(f"http://{gw.http}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    assert f'rocketgate_schema_refused_records_total{{protocol="remoting",side="value",topic="{topic}"}} 2.0' in text
    assert f'rocketgate_schema_refused_records_total{{protocol="kafka",side="value",topic="{topic}"}} 1.0' in text


def test_dashboard_and_admin_list_subjects_and_validating_topics(gw, admin, capsys):
    from gateway.admin.cli import main
    topic = _topic(admin, {"confluent.value.schema.validation": "true",
                           "confluent.value.subject.name.strategy": "RecordNameStrategy"})
    _note(gw, topic, "listed")  # registers t.Note's schema under <topic>-value
    assert main(["--http", gw.http, "--json", "schemas", "subjects"]) == 0
    subjects = {row["subject"]: row for row in json.loads(capsys.readouterr().out)}
    assert subjects[f"{topic}-value"]["versions"] == "1" and subjects[f"{topic}-value"]["type"] == "AVRO"
    assert main(["--http", gw.http, "--json", "schemas", "topics"]) == 0
    rows = {row["topic"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows[topic]["value_validation"] == "true" and rows[topic]["value_strategy"] == "RecordNameStrategy"
    assert rows[topic]["key_validation"] == "false"
    with urllib.request.urlopen(f"http://{gw.http}/schemas", timeout=10) as resp:
        page = resp.read().decode()
    assert f"{topic}-value" in page and "RecordNameStrategy" in page
