"""The Kafka command-line tools (classes from the Kafka 4.x jars) against a live gateway:
kafka-topics --create/--describe/--list/--delete, console producer → console consumer,
kafka-consumer-groups --describe."""
import pytest

from compat.harness import failure_context, module_gateway  # noqa: F401 (fixture gw)
from compat.tools import kafka_tool, table

LINES = [f"key-{i}:value-{i}" for i in range(6)]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kafka-cli-logs"))


def run(gw, logs, tool, *args, input=None):
    r = kafka_tool(tool, ["--bootstrap-server", gw.kafka_bootstrap, *args], logs, input=input)
    assert r.returncode == 0, f"{tool} {args} -> {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}{failure_context(gw)}"
    return r.stdout


def test_topics_create_describe_delete(gw, logs):
    out = run(gw, logs, "kafka-topics", "--create", "--topic", "cli-topic", "--partitions", "3", "--replication-factor", "1")
    assert "Created topic cli-topic" in out
    out = run(gw, logs, "kafka-topics", "--describe", "--topic", "cli-topic")
    assert "PartitionCount: 3" in out, out
    parts = [line for line in out.splitlines() if "Partition: " in line and "Leader: " in line]
    assert len(parts) == 3, out
    assert "cli-topic" in run(gw, logs, "kafka-topics", "--list").split()
    run(gw, logs, "kafka-topics", "--delete", "--topic", "cli-topic")
    assert "cli-topic" not in run(gw, logs, "kafka-topics", "--list").split()


@pytest.fixture(scope="module")
def console_roundtrip(gw, logs):
    """Keyed lines through the console producer, read back by the console consumer in group cli-group."""
    run(gw, logs, "kafka-topics", "--create", "--topic", "cli-io", "--partitions", "2", "--replication-factor", "1")
    run(gw, logs, "kafka-console-producer", "--topic", "cli-io", "--reader-property", "parse.key=true",
        "--reader-property", "key.separator=:", input="\n".join(LINES) + "\n")
    return run(gw, logs, "kafka-console-consumer", "--topic", "cli-io", "--from-beginning", "--group", "cli-group",
               "--max-messages", str(len(LINES)), "--timeout-ms", "60000",
               "--formatter-property", "print.key=true", "--formatter-property", "key.separator=:")


def test_console_producer_to_console_consumer(console_roundtrip):
    assert sorted(console_roundtrip.splitlines()) == sorted(LINES)


def test_consumer_groups_describe(gw, logs, console_roundtrip):
    out = run(gw, logs, "kafka-consumer-groups", "--describe", "--group", "cli-group")
    rows = [r for r in table(out, "GROUP") if r["TOPIC"] == "cli-io"]
    assert sorted(r["PARTITION"] for r in rows) == ["0", "1"], out
    assert sum(int(r["CURRENT-OFFSET"]) for r in rows) == len(LINES), out
    assert all(r["LAG"] == "0" and r["CURRENT-OFFSET"] == r["LOG-END-OFFSET"] for r in rows), out
    assert "cli-group" in run(gw, logs, "kafka-consumer-groups", "--list").split()
