"""Backtracking by time on the Kafka side: `kafka-consumer-groups --reset-offsets` (--to-datetime,
--by-duration, --shift-by, --to-earliest) on an inactive group, the refusal while the group has
live members, and the one offset table: a Kafka reset is what RocketMQ clients see, and a RocketMQ
reset (mqadmin resetOffsetByTime) is what Kafka sees."""
import datetime
import subprocess
import time

import pytest

from client import Admin
from compat.harness import failure_context, module_gateway  # noqa: F401 (fixture gw)
from compat.jvm import KAFKA_TOOLS, java_command
from compat.tools import kafka_tool, mqadmin, table

pytestmark = pytest.mark.timeout(600)
TOPIC, GROUP = "kr-topic", "kr-group"
OLD, NEW = [f"old-{i}" for i in range(4)], [f"new-{i}" for i in range(3)]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kafka-reset-logs"))


def run(gw, logs, tool, *args, input=None, check=True):
    r = kafka_tool(tool, ["--bootstrap-server", gw.kafka_bootstrap, *args], logs, input=input)
    if check:
        assert r.returncode == 0, f"{tool} {args} -> {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}{failure_context(gw)}"
    return r


@pytest.fixture(scope="module")
def loaded(gw, logs):
    """One partition: OLD, a gap holding the reset instant, NEW; group GROUP consumed everything."""
    run(gw, logs, "kafka-topics", "--create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "1")
    run(gw, logs, "kafka-console-producer", "--topic", TOPIC, input="\n".join(OLD) + "\n")
    time.sleep(0.3)
    instant = datetime.datetime.now(datetime.timezone.utc)
    time.sleep(0.3)
    run(gw, logs, "kafka-console-producer", "--topic", TOPIC, input="\n".join(NEW) + "\n")
    out = run(gw, logs, "kafka-console-consumer", "--topic", TOPIC, "--from-beginning", "--group", GROUP,
              "--max-messages", str(len(OLD) + len(NEW)), "--timeout-ms", "60000").stdout
    assert out.split() == OLD + NEW
    return instant


def reset(gw, logs, *how, check=True):
    """--reset-offsets ... --execute: the NEW-OFFSET of partition 0 (None when refused)."""
    r = run(gw, logs, "kafka-consumer-groups", "--reset-offsets", "--group", GROUP, "--topic", TOPIC, *how,
            "--execute", check=check)
    rows = [row for row in table(r.stdout, "GROUP") if row.get("TOPIC") == TOPIC]
    return (int(rows[0]["NEW-OFFSET"]) if rows else None), r


def rocketmq_offset(gw, group=GROUP):
    with Admin(gw.namesrv) as a:
        return {mq.queue_id: row["consumerOffset"] for mq, row in a.consumer_progress(group, TOPIC).items()}[0]


def kafka_offset(gw, logs):
    out = run(gw, logs, "kafka-consumer-groups", "--describe", "--group", GROUP).stdout
    return int([r for r in table(out, "GROUP") if r["TOPIC"] == TOPIC][0]["CURRENT-OFFSET"])


def iso(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def test_to_datetime_is_visible_to_rocketmq(gw, logs, loaded):
    assert reset(gw, logs, "--to-datetime", iso(loaded))[0] == len(OLD)
    assert kafka_offset(gw, logs) == len(OLD)
    assert rocketmq_offset(gw) == len(OLD)  # the one offset table


def test_by_duration_shift_by_and_earliest(gw, logs, loaded):
    assert reset(gw, logs, "--by-duration", "PT1H")[0] == 0  # everything is younger than an hour
    assert reset(gw, logs, "--shift-by", "5")[0] == 5
    assert reset(gw, logs, "--shift-by", "-100")[0] == 0  # clamped to the earliest offset
    assert reset(gw, logs, "--to-datetime", "2000-01-01T00:00:00.000Z")[0] == 0  # before retention: earliest
    assert rocketmq_offset(gw) == 0


def test_future_datetime_goes_to_the_end(gw, logs, loaded):
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    assert reset(gw, logs, "--to-datetime", iso(future))[0] == len(OLD) + len(NEW)


def test_rocketmq_reset_is_visible_to_kafka(gw, logs, loaded, tmp_path):
    ms = int(loaded.timestamp() * 1000)
    r = mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", GROUP, "-t", TOPIC, "-s", str(ms)], str(tmp_path))
    assert r.returncode == 0 and "Exception" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert kafka_offset(gw, logs) == len(OLD)


def test_reset_of_an_active_group_is_refused_by_both(gw, logs, loaded, tmp_path):
    """A live console consumer in the group: Kafka's tool refuses (the group is not empty), and
    mqadmin resetOffsetByTime gets SYSTEM_ERROR with the reason; the offsets stay."""
    reset(gw, logs, "--to-earliest")
    consumer = subprocess.Popen(java_command("kafkatools", KAFKA_TOOLS["kafka-console-consumer"],
                                             ["--bootstrap-server", gw.kafka_bootstrap, "--topic", TOPIC,
                                              "--group", GROUP, "--timeout-ms", "120000"], logs),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=logs)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and kafka_offset(gw, logs) != len(OLD) + len(NEW):
            time.sleep(0.5)  # it has joined and committed what it read
        committed = kafka_offset(gw, logs)
        assert committed == len(OLD) + len(NEW)
        new_offset, r = reset(gw, logs, "--to-earliest", check=False)
        assert new_offset is None and "inactive" in r.stdout + r.stderr, r.stdout + r.stderr
        r = mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", GROUP, "-t", TOPIC, "-s", "0"], str(tmp_path))
        assert "active Kafka member" in r.stdout + r.stderr, r.stdout + r.stderr
        assert kafka_offset(gw, logs) == committed and rocketmq_offset(gw) == committed
    finally:
        consumer.kill()
        consumer.wait()


def test_kafka_reset_of_a_group_with_live_rocketmq_consumers_is_refused(gw, logs, loaded):
    """The same group name consumed by a running `client/` PushConsumer: Kafka's tool sees the group
    as Stable and refuses, so the RocketMQ consumer's positions are not pulled from under it."""
    from client import ConsumeFrom, ConsumeStatus, PushConsumer
    group = "kr-rmq-group"
    c = PushConsumer(group, gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=0.5)
    c.subscribe(TOPIC, "*")
    c.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
    c.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and rocketmq_offset(gw, group) != len(OLD) + len(NEW):
            time.sleep(0.2)
        r = run(gw, logs, "kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", TOPIC,
                "--to-earliest", "--execute", check=False)
        assert "inactive" in r.stdout + r.stderr and "Stable" in r.stdout + r.stderr, r.stdout + r.stderr
        assert rocketmq_offset(gw, group) == len(OLD) + len(NEW)
    finally:
        c.shutdown()
    r = run(gw, logs, "kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", TOPIC,
            "--to-earliest", "--execute")
    assert rocketmq_offset(gw, group) == 0, r.stdout  # once it is gone, the reset goes through
