"""KIP-714 client telemetry: GetTelemetrySubscriptions and PushTelemetry, answered as Apache Kafka 4.3.1
answers with a telemetry-accepting metrics reporter and a client-metrics subscription (the same cases run
against it first), and the metrics librdkafka pushes shown on the gateway's /metrics.
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
import urllib.request
import uuid

import pytest
from gateway_process import GatewayProcess, free_port
from kafka_java import KAFKA_JARS, compile_against_kafka
from kafka_raw import RawClient
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from bench.brokers import KafkaBroker
from compat.jvm import JAVA_DIR

pytestmark = pytest.mark.timeout(300)

REPORTER = os.path.join(JAVA_DIR, "src", "kafkatelemetry", "compat", "TelemetryReporter.java")
JAVA_PRODUCER = os.path.join(JAVA_DIR, "src", "kafkatelemetry", "compat", "TelemetryProducer.java")
PREFIXES = ["org.apache.kafka.producer.", "org.apache.kafka.consumer."]
INTERVAL_MS = 1000
ZERO = uuid.UUID(int=0)


def _subscribe_kafka(bootstrap: str) -> None:
    """A client-metrics subscription on Kafka (what kafka-client-metrics.sh --alter does)."""
    client = RawClient(bootstrap, timeout=30)
    try:
        answer = client.call(44, 1, {"validate_only": False, "resources": [
            {"resource_type": 16, "resource_name": "all-clients", "configs": [
                {"name": "metrics", "config_operation": 0, "value": ",".join(PREFIXES)},
                {"name": "interval.ms", "config_operation": 0, "value": str(INTERVAL_MS)}]}]})
        assert answer["responses"][0]["error_code"] == 0
    finally:
        client.close()


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    """{"kafka": bootstrap, "gateway": GatewayProcess}."""
    classes = compile_against_kafka(REPORTER, str(tmp_path_factory.mktemp("telemetry-reporter")))
    kafka = KafkaBroker(str(tmp_path_factory.mktemp("kafka")), classpath=classes,
                        extra={"metric.reporters": "compat.TelemetryReporter"})
    http_port = free_port()
    gateway = GatewayProcess(str(tmp_path_factory.mktemp("gateway") / "data"), extra_args=[
        "--http-port", str(http_port), "--kafka-telemetry-metrics", ",".join(PREFIXES),
        "--kafka-telemetry-interval-ms", str(INTERVAL_MS)])
    gateway.http_port = http_port
    try:
        kafka.start()
        _subscribe_kafka(kafka.bootstrap)
        gateway.start()
        yield {"kafka": kafka.bootstrap, "gateway": gateway}
    finally:
        gateway.stop()
        kafka.stop()


def _bootstrap(brokers, which: str) -> str:
    return brokers["kafka"] if which == "kafka" else brokers["gateway"].kafka_bootstrap


def _subscription(client: RawClient) -> dict:
    """A new instance's subscription, once the broker applied the client-metrics configuration."""
    deadline = time.monotonic() + 30
    while True:
        answer = client.call(71, 0, {"client_instance_id": ZERO})
        if answer["requested_metrics"] or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


def _push(client, answer, *, subscription=None, compression=0, metrics=b"", terminating=False) -> int:
    return client.call(72, 0, {
        "client_instance_id": answer["client_instance_id"], "terminating": terminating,
        "subscription_id": answer["subscription_id"] if subscription is None else subscription,
        "compression_type": compression, "metrics": metrics})["error_code"]


@pytest.mark.parametrize("which", ["kafka", "gateway"])
def test_subscription_as_kafka(brokers, which):
    client = RawClient(_bootstrap(brokers, which), timeout=30)
    try:
        answer = _subscription(client)
    finally:
        client.close()
    assert answer["error_code"] == 0
    assert uuid.UUID(bytes=answer["client_instance_id"]) != ZERO
    assert answer["requested_metrics"] == PREFIXES
    assert answer["push_interval_ms"] == INTERVAL_MS
    assert answer["accepted_compression_types"] == [4, 3, 1, 2]  # zstd, lz4, gzip, snappy
    assert answer["telemetry_max_bytes"] == 1 << 20


@pytest.mark.parametrize("which", ["kafka", "gateway"])
def test_push_errors_as_kafka(brokers, which):
    """Each case on a new instance (a second push sooner than the interval is throttled)."""
    client = RawClient(_bootstrap(brokers, which), timeout=30)
    try:
        answer = _subscription(client)
        assert _push(client, answer, subscription=answer["subscription_id"] ^ 1) == 117  # UNKNOWN_SUBSCRIPTION_ID
        assert _push(client, {**answer, "client_instance_id": uuid.uuid4().bytes}) == 117
        assert _push(client, _subscription(client), compression=7) == 76  # UNSUPPORTED_COMPRESSION_TYPE
        big = _subscription(client)
        assert _push(client, big, metrics=bytes(big["telemetry_max_bytes"] + 1)) == 118  # TELEMETRY_TOO_LARGE
        garbage = _subscription(client)
        assert _push(client, garbage, metrics=b"\xff\xff\xff not protobuf") == 0  # Kafka: the exporter's business
        assert _push(client, garbage) == 89  # THROTTLING_QUOTA_EXCEEDED: sooner than push_interval_ms
        again = client.call(71, 0, {"client_instance_id": garbage["client_instance_id"]})
        assert again["error_code"] == 89 and again["requested_metrics"] == []
        last = _subscription(client)
        assert _push(client, last, terminating=True) == 0
        assert _push(client, last, terminating=True) == 42  # INVALID_REQUEST: no push after the last one
    finally:
        client.close()


@pytest.mark.parametrize("which", ["kafka", "gateway"])
def test_a_known_instance_id_is_answered_back(brokers, which):
    """A client asks again with its instance id (after a push error, or through another broker: in a
    cluster each gateway has its own telemetry state); the answer carries that id. Before, the gateway
    answered a zero id and kafka-clients' I/O thread failed ("clientInstanceId is not valid", seen by
    the fault harness's Java workloads)."""
    client = RawClient(_bootstrap(brokers, which), timeout=30)
    try:
        mine = uuid.uuid4().bytes  # never seen by this broker
        answer = client.call(71, 0, {"client_instance_id": mine})
    finally:
        client.close()
    assert answer["error_code"] == 0 and answer["client_instance_id"] == mine


def _scrape(gateway) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{gateway.http_port}/metrics", timeout=10) as resp:
        return resp.read().decode()


def _otlp(gauges: dict, topic: str) -> bytes:
    """MetricsData with one gauge point per {name: value}, each with a topic attribute."""
    data = MetricsData()
    scope = data.resource_metrics.add().scope_metrics.add()
    for name, value in gauges.items():
        point = scope.metrics.add(name=name).gauge.data_points.add(as_double=value)
        point.attributes.append(KeyValue(key="topic", value=AnyValue(string_value=topic)))
    return data.SerializeToString()


def test_pushed_metrics_on_prometheus(brokers):
    """A pushed gauge shows per instance and attributes; a name outside the subscription does not."""
    gateway = brokers["gateway"]
    client = RawClient(gateway.kafka_bootstrap, timeout=30)
    try:
        answer = _subscription(client)
        instance = uuid.UUID(bytes=answer["client_instance_id"]).hex
        gauges = {"org.apache.kafka.producer.record.queue.time.avg": 2.5, "org.apache.kafka.other.thing": 1.0}
        assert _push(client, answer, metrics=_otlp(gauges, "t1")) == 0
    finally:
        client.close()
    text = _scrape(gateway)
    ours = [line for line in text.splitlines() if f'client_instance_id="{instance}"' in line]
    assert len(ours) == 1, ours
    assert 'metric="org.apache.kafka.producer.record.queue.time.avg"' in ours[0]
    assert 'attributes="topic=t1"' in ours[0] and ours[0].endswith(" 2.5")


def test_librdkafka_pushes_its_metrics(brokers):
    """confluent-kafka (telemetry on by default: enable.metrics.push) subscribes and pushes; /metrics shows it."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    gateway = brokers["gateway"]
    producer = confluent_kafka.Producer({"bootstrap.servers": gateway.kafka_bootstrap,
                                         "client.id": "telemetry-probe"})
    try:
        for i in range(10):
            producer.produce("telemetry-topic", value=b"v%d" % i)
        producer.flush(30)
        deadline = time.monotonic() + 60
        lines = []
        while not lines and time.monotonic() < deadline:
            producer.poll(0.5)
            lines = [line for line in _scrape(gateway).splitlines() if line.startswith(
                "rocketgate_kafka_client_metric{") and 'client_id="telemetry-probe"' in line
                and 'metric="org.apache.kafka.producer.' in line]
        assert lines, "librdkafka pushed no producer metrics"
    finally:
        producer.flush(10)


def _lines(gateway, client_id: str, prefix: str) -> list[str]:
    return [line for line in _scrape(gateway).splitlines() if line.startswith("rocketgate_kafka_client_metric{")
            and f'client_id="{client_id}"' in line and f'metric="{prefix}' in line]


def _java_instance(classes: str, bootstrap: str, client_id: str) -> str:
    """Run the Java producer for four push intervals; its client instance id, as hex."""
    run = subprocess.run([shutil.which("java"), "-cp", os.pathsep.join([classes, os.path.join(KAFKA_JARS, "*")]),
                          "compat.TelemetryProducer", bootstrap, "telemetry-java", client_id, str(4 * INTERVAL_MS)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    java_uuid = run.stdout.split("instance=", 1)[1].split()[0]  # Kafka's Uuid: URL-safe base64, unpadded
    return base64.urlsafe_b64decode(java_uuid + "==").hex()


def test_java_client_pushes_its_metrics(brokers, tmp_path):
    """kafka-clients 4.3.1 (telemetry on by default) gets an instance id from Kafka and from the gateway;
    the gateway's /metrics shows what it pushed under that id."""
    classes = compile_against_kafka(JAVA_PRODUCER, str(tmp_path))
    assert int(_java_instance(classes, brokers["kafka"], "java-probe"), 16) != 0
    gateway = brokers["gateway"]
    instance = _java_instance(classes, gateway.kafka_bootstrap, "java-probe")
    lines = _lines(gateway, "java-probe", "org.apache.kafka.producer.")
    assert lines and all(f'client_instance_id="{instance}"' in line for line in lines), lines[:3]
