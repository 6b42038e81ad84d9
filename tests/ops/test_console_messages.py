"""The console's message browser in headless chromium: search by store time, tag and property
(native RocketMQ client), by a client msgId, and records written by confluent-kafka's
AvroSerializer / ProtobufSerializer through the gateway's schema registry shown decoded."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer as KafkaProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import chromium
from client import Message, Producer
from gateway_process import GatewayProcess, free_port, wait_port

pytest.importorskip("selenium")

pytestmark = chromium.needs_chromium
USER = """{"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
          {"name": "age", "type": "int"}]}"""
ORDER = """{"type": "object", "properties": {"order": {"type": "integer"}, "paid": {"type": "boolean"}}}"""


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    http_port, registry_port = free_port(), free_port()
    g = GatewayProcess(str(tmp_path_factory.mktemp("msgs") / "data"),
                       extra_args=["--http-port", str(http_port), "--schema-registry-port", str(registry_port)])
    g.base, g.registry = f"http://127.0.0.1:{http_port}", f"http://127.0.0.1:{registry_port}"
    g.start()
    wait_port(registry_port)
    yield g
    g.stop()


def _form(browser, button: str, **fields) -> str:
    """Fill the GET form whose button says `button`, submit it; the answer's main text."""
    chromium.submit_form(browser, button, **fields)
    return _settled(browser)


def _settled(browser) -> str:
    """The answer page's text once it has a result (messages, none, or a refusal)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = chromium.main_text(browser)
        if "body (" in text or "No messages" in text or "must be" in text or "needs its topic" in text:
            return text
        time.sleep(0.1)
    return chromium.main_text(browser)


def test_search_by_time_tag_and_property(gw, browser):
    with Producer("m-pg", gw.namesrv) as prod:
        for i in range(6):
            prod.send(Message("events", b"early-%d" % i, tags="old"))
        time.sleep(1.1)
        since = int(time.time() * 1000)
        sent = []
        for i in range(6):
            m = Message("events", b"late-%d" % i, tags="new" if i % 2 else "old")
            m.properties["region"] = "eu" if i < 3 else "us"
            sent.append(prod.send(m))
    browser.get(gw.base + "/messages")
    found = _form(browser, "Search", topic="events", since=str(since))
    assert found.count("late-") == 6 and "early-" not in found
    browser.get(gw.base + "/messages")
    found = _form(browser, "Search", topic="events", tag="new")
    assert sorted(x for x in ("late-1", "late-3", "late-5") if x in found) == ["late-1", "late-3", "late-5"]
    assert "late-0" not in found and "early-" not in found
    browser.get(gw.base + "/messages")
    found = _form(browser, "Search", topic="events", tag="old", property="region=us")
    assert "late-4" in found and "late-3" not in found and "late-0" not in found and "early-" not in found
    chromium.shot(browser, "messages-search")
    browser.get(gw.base + "/messages")
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since / 1000 - 3600))
    assert "early-0" in _form(browser, "Search", topic="events", since=iso)  # an ISO time, UTC
    browser.get(gw.base + "/messages")
    assert "must be epoch ms or an ISO time" in _form(browser, "Search", topic="events", since="yesterday")
    browser.get(gw.base + "/messages")
    assert "property must be name=value" in _form(browser, "Search", topic="events", property="region")
    browser.get(gw.base + "/messages")  # a client msgId (UNIQ_KEY), as the producer's SendResult names it
    found = _form(browser, "Find by msgId", msg_id=sent[2].msg_id, topic="events")
    assert "late-2" in found and "late-1" not in found
    browser.get(gw.base + "/messages")
    assert "No messages" in _form(browser, "Find by msgId", msg_id=sent[2].msg_id, topic="")  # no such offset
    browser.get(gw.base + "/messages")
    assert "needs its topic" in _form(browser, "Find by msgId", msg_id="order-17", topic="")


def test_records_decoded_by_their_schema(gw, browser):
    registry = SchemaRegistryClient({"url": gw.registry})
    serialize = AvroSerializer(registry, USER)
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap})
    value = serialize({"name": "Ada", "age": 36}, SerializationContext("people", MessageField.VALUE))
    p.produce("people", value=value, partition=0)
    as_json = JSONSerializer(ORDER, registry)
    p.produce("bills", value=as_json({"order": 7, "paid": True}, SerializationContext("bills", MessageField.VALUE)),
              partition=0)
    p.produce("people", value=b"\x00\x00\x00\x7f\xffnot known", partition=0)  # framed, id unknown: hex
    assert p.flush(20) == 0
    del p  # closed now: its connection must not outlive the gateway
    browser.get(gw.base + "/messages?topic=people&queue=0&offset=0")
    text = _settled(browser)
    assert "body (AVRO schema 1):" in text and '"name": "Ada"' in text and '"age": 36' in text
    assert "body (hex):" in text
    chromium.shot(browser, "messages-avro")
    browser.get(gw.base + "/messages?topic=bills&queue=0&offset=0")
    text = _settled(browser)
    assert "body (JSON schema 2):" in text and '"order": 7' in text and '"paid": true' in text


PARCEL = ('syntax = "proto3";\npackage consoleshop;\nmessage Label { string text = 1; }\n'
          'message Parcel { string id = 1; int64 grams = 2; repeated Label labels = 3; }\n')


def test_protobuf_record_decoded(gw, browser, tmp_path):
    """confluent-kafka's ProtobufSerializer, the second message of its file (message index 1): the
    browser shows the record as JSON by the registered schema."""
    import importlib
    import importlib.resources
    import sys
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from grpc_tools import protoc
    (tmp_path / "consoleshop").mkdir()
    (tmp_path / "consoleshop" / "parcel.proto").write_text(PARCEL)
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{tmp_path}", f"-I{include}", f"--python_out={tmp_path}",
                        "consoleshop/parcel.proto"]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        parcel_pb2 = importlib.import_module("consoleshop.parcel_pb2")
    finally:
        sys.path.remove(str(tmp_path))
    serialize = ProtobufSerializer(parcel_pb2.Parcel, SchemaRegistryClient({"url": gw.registry}),
                                   {"use.deprecated.format": False})
    parcel = parcel_pb2.Parcel(id="p-9", grams=1250, labels=[parcel_pb2.Label(text="fragile")])
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap})
    p.produce("parcels", value=serialize(parcel, SerializationContext("parcels", MessageField.VALUE)), partition=0)
    assert p.flush(20) == 0
    del p
    browser.get(gw.base + "/messages?topic=parcels&queue=0&offset=0")
    text = _settled(browser)
    assert "body (PROTOBUF schema" in text, text
    assert '"id": "p-9"' in text and '"grams": "1250"' in text and '"text": "fragile"' in text, text
    chromium.shot(browser, "messages-protobuf")
