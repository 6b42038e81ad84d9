"""The Produce and Fetch versions real clients negotiate: each client produces and consumes a few
records with its protocol debug log on, and the versions of the requests it sent are read from that
log. EXPECTED holds what each negotiated with Kafka 4.3.1 (run first with KAFKA_REFERENCE_BOOTSTRAP,
see kafka_target): the gateway must be asked the same, i.e. advertise at least what the clients know
(Java kafka-clients 4.2: Fetch v18 and Produce v13, by topic id; librdkafka 2.16: Fetch v16 by topic
id, Produce v10; kafka-python 3.0: Fetch v12 and Produce v9, by name)."""
from __future__ import annotations

import logging
import re
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KpTopicPartition
from kafka_target import target  # noqa: F401 (fixture)

from compat.jvm import JVM_FLAGS, KAFKA_TOOLS, classpath

pytestmark = pytest.mark.timeout(300)

# client -> {api: version} measured against Kafka 4.3.1
EXPECTED = {
    "java": {"Produce": 13, "Fetch": 18},
    "librdkafka": {"Produce": 10, "Fetch": 16},  # confluent-kafka 2.16: KIP-951 leader discovery, by topic id
    "kafka-python": {"Produce": 9, "Fetch": 12},  # kafka-python 3.0: by name
}
VALUES = [f"v{i}" for i in range(5)]


def _topic(bootstrap: str, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(30)
    return name


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record) -> None:
        self.lines.append(record.getMessage())


def _versions(lines, pattern: str) -> dict[str, int]:
    """{"Produce": highest version seen, "Fetch": ...} in the log lines."""
    out: dict[str, int] = {}
    for line in lines:
        for api, version in re.findall(pattern, line):
            api = {"PRODUCE": "Produce", "FETCH": "Fetch"}.get(api, api)
            if api in ("Produce", "Fetch"):
                out[api] = max(out.get(api, -1), int(version))
    return out


def test_java_kafka_clients(target, tmp_path):
    topic = _topic(target.bootstrap, "java-v")
    debug = "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.NetworkClient=debug"

    def tool(name: str, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
        cmd = ["java", *JVM_FLAGS, debug, "-cp", classpath("kafkatools"), KAFKA_TOOLS[name], *args]
        return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=180, cwd=str(tmp_path))

    produced = tool("kafka-console-producer", ["--bootstrap-server", target.bootstrap, "--topic", topic],
                    "\n".join(VALUES) + "\n")
    consumed = tool("kafka-console-consumer", ["--bootstrap-server", target.bootstrap, "--topic", topic,
                                               "--from-beginning", "--max-messages", str(len(VALUES)),
                                               "--timeout-ms", "60000"])
    assert consumed.stdout.split() == VALUES, consumed.stderr[-3000:]
    seen = _versions((produced.stderr + consumed.stderr).splitlines(), r"apiKey=(\w+), apiVersion=(\d+)")
    print("java", seen)
    assert seen == EXPECTED["java"]


def test_librdkafka(target):
    topic = _topic(target.bootstrap, "rdkafka-v")
    log = logging.getLogger(f"rdkafka-{topic}")
    lines = _Lines()
    log.addHandler(lines)
    log.setLevel(logging.DEBUG)
    conf = {"bootstrap.servers": target.bootstrap, "debug": "protocol", "logger": log}
    p = Producer(conf)
    for v in VALUES:
        p.produce(topic, v.encode())
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < len(VALUES) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    assert got == VALUES
    seen = _versions(lines.lines, r"Sent (\w+)Request \(v(\d+)")
    print("librdkafka", seen)
    assert seen == EXPECTED["librdkafka"]


def test_kafka_python(target):
    topic = _topic(target.bootstrap, "kpy-v")
    lines = _Lines()
    log = logging.getLogger("kafka")
    old_level = log.level
    log.addHandler(lines)
    log.setLevel(logging.DEBUG)
    try:
        p = KafkaProducer(bootstrap_servers=target.bootstrap)
        for v in VALUES:
            p.send(topic, v.encode(), partition=0)
        p.flush(30)
        p.close()
        c = KafkaConsumer(bootstrap_servers=target.bootstrap, consumer_timeout_ms=20000)
        c.assign([KpTopicPartition(topic, 0)])
        c.seek_to_beginning()
        got = []
        for m in c:
            got.append(m.value.decode())
            if len(got) == len(VALUES):
                break
        c.close()
    finally:
        log.removeHandler(lines)
        log.setLevel(old_level)
    assert got == VALUES
    seen = _versions(lines.lines, r"(\w+)Request\(version=(\d+)")
    print("kafka-python", seen)
    assert seen == EXPECTED["kafka-python"]
