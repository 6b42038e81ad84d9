"""Kafka's own admin tools on configs, groups and records: kafka-configs --alter/--describe,
kafka-consumer-groups --describe/--delete-offsets, kafka-delete-records. kafka-configs is Scala
(kafka.admin.ConfigCommand) and ships only with the broker, so it runs from bench/jars/kafka; the
others come from the kafka-tools jar (compat/java kafkatools). Checked against Kafka 4.3 first."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka_target import eventually, target  # noqa: F401 (fixture)

from bench.brokers import java_classpath
from compat.jvm import JVM_FLAGS, run_tool
from compat.tools import table

CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return str(tmp_path_factory.mktemp("admin-cli"))


def _ok(r: subprocess.CompletedProcess, what: str) -> str:
    assert r.returncode == 0, f"{what} -> {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def kafka_configs(target, *args: str) -> subprocess.CompletedProcess:
    cmd = [shutil.which("java") or "java", *JVM_FLAGS, "-cp", java_classpath("kafka"), "kafka.admin.ConfigCommand",
           "--bootstrap-server", target.bootstrap, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def tool(target, logs: str, main: str, *args: str) -> str:
    return _ok(run_tool("kafkatools", main, ["--bootstrap-server", target.bootstrap, *args], logs), main)


def _topic(target, partitions: int) -> str:
    name = f"cli-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(15)
    return name


def test_kafka_configs_alter_and_describe(target):
    topic = _topic(target, 1)
    _ok(kafka_configs(target, "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config",
                      "retention.ms=12345,cleanup.policy=[compact,delete]"), "kafka-configs --alter")
    out = eventually(lambda: _has(_ok(kafka_configs(target, "--entity-type", "topics", "--entity-name", topic,
                                                    "--describe"), "kafka-configs --describe"), "retention.ms=12345"))
    assert "DYNAMIC_TOPIC_CONFIG:retention.ms=12345" in out
    assert "cleanup.policy=compact,delete" in out
    everything = _ok(kafka_configs(target, "--entity-type", "topics", "--entity-name", topic, "--describe", "--all"),
                     "kafka-configs --describe --all")
    assert "compression.type=producer" in everything and "segment.ms=" in everything
    _ok(kafka_configs(target, "--entity-type", "topics", "--entity-name", topic, "--alter", "--delete-config",
                      "retention.ms"), "kafka-configs --delete-config")
    eventually(lambda: _lacks(_ok(kafka_configs(target, "--entity-type", "topics", "--entity-name", topic,
                                                "--describe"), "describe"), "retention.ms="))
    bad = kafka_configs(target, "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config",
                        "retention.ms=soon")
    assert bad.returncode != 0
    assert "Invalid value soon for configuration retention.ms: Not a number of type LONG" in bad.stdout + bad.stderr


def test_kafka_configs_scram_user_without_an_authorizer(target):
    """AlterUserScramCredentials on a broker without an authorizer succeeds, as on Kafka 4.3 (nothing to
    authorize): kafka-configs adds, describes and deletes a user's SCRAM credentials."""
    user = f"cli-user-{uuid.uuid4().hex[:8]}"
    users = ("--entity-type", "users", "--entity-name", user)
    out = _ok(kafka_configs(target, *users, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=s1]"),
              "kafka-configs --alter users")
    assert f"Completed updating config for user {user}." in out
    _ok(kafka_configs(target, *users, "--alter", "--add-config", "SCRAM-SHA-512=[password=other]"), "add a mechanism")
    twice = kafka_configs(target, *users, "--alter", "--add-config",  # one user twice in one request
                          "SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=b]")
    assert twice.returncode != 0 and "A user credential cannot be altered twice in the same request" in twice.stderr
    described = eventually(lambda: _has(_ok(kafka_configs(target, *users, "--describe"), "describe users"),
                                        "SCRAM-SHA-512"))
    assert "SCRAM-SHA-256=iterations=8192" in described and "SCRAM-SHA-512=iterations=4096" in described
    _ok(kafka_configs(target, *users, "--alter", "--delete-config", "SCRAM-SHA-512"), "kafka-configs --delete-config")
    eventually(lambda: _lacks(_ok(kafka_configs(target, *users, "--describe"), "describe users"), "SCRAM-SHA-512"))


def _has(text: str, part: str) -> str:
    assert part in text, text
    return text


def _lacks(text: str, part: str) -> str:
    assert part not in text, text
    return text


def test_consumer_groups_describe_and_delete_offsets(target, logs):
    topic = _topic(target, 2)
    p = Producer({"bootstrap.servers": target.bootstrap})
    for i in range(6):
        p.produce(topic, value=b"%d" % i, partition=i % 2)
    assert p.flush(15) == 0
    group = f"cli-g-{uuid.uuid4().hex[:8]}"
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0
    for _ in range(300):
        m = c.poll(0.2)
        got += m is not None and m.error() is None
        if got == 6:
            break
    c.commit(asynchronous=False)
    c.close()
    out = tool(target, logs, CONSUMER_GROUPS, "--describe", "--group", group)
    rows = [r for r in table(out, "GROUP") if r["TOPIC"] == topic]
    assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in rows) == [("0", "3", "0"), ("1", "3", "0")]
    out = tool(target, logs, CONSUMER_GROUPS, "--delete-offsets", "--group", group, "--topic", f"{topic}:0")
    assert "Successful" in out or "Deletion of offsets" in out, out
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0), TopicPartition(topic, 1)])
    offsets = admin.list_consumer_group_offsets([req])[group].result(15).topic_partitions
    assert sorted((tp.partition, tp.offset) for tp in offsets) == [(0, -1001), (1, 3)]


def test_delete_records_tool(target, logs, tmp_path):
    topic = _topic(target, 1)
    p = Producer({"bootstrap.servers": target.bootstrap})
    for i in range(5):
        p.produce(topic, value=b"%d" % i, partition=0)
        p.flush(15)
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 3}]}))
    out = tool(target, logs, DELETE_RECORDS, "--offset-json-file", os.fspath(spec))
    assert "low_watermark: 3" in out, out
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    earliest = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    assert list(earliest.values())[0].result(15).offset == 3
