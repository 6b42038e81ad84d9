"""Backtracking by time with the real command-line tools on a tiered topic: the records of the reset
instant are only in the object store (their local CommitLog files uploaded, then deleted).
`kafka-consumer-groups --reset-offsets --to-datetime` (Kafka 4.x tools) resets an inactive group and
a Kafka consumer of that group then reads from the first record after the instant; `mqadmin
resetOffsetByTime` (RocketMQ 5.x tools) resets a group with a live PushConsumer, which consumes
again from that record. Kafka 4.3.1's own tiered storage answered the same reset the same way
(docs/tiered-storage.md, "Reads below the local start")."""
from __future__ import annotations

import datetime
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from client import ConsumeFrom, ConsumeStatus, PushConsumer
from compat.tools import kafka_tool, mqadmin, table
from gateway_process import GatewayProcess
from tests.tier.tier_gateway import FILE_SIZE, TIERED, list_offset, wait_for
import waiting

pytestmark = pytest.mark.timeout(300)
TOPIC = "bt-tiered"
OLD = [b"old-%05d|" % i + b"o" * 1000 for i in range(700)]
NEW = [b"new-%05d|" % i + b"n" * 1000 for i in range(700)]


@pytest.fixture(scope="module")
def loaded(seaweed_s3, tmp_path_factory):
    """A tiered gateway holding OLD, a gap with the reset instant, NEW; waited until the local start
    is past the first NEW record, so the instant is served from the tier only."""
    bucket = "bt-" + str(int(time.time() * 1000))
    seaweed_s3.create_bucket(bucket)
    work = tmp_path_factory.mktemp("backtrack")
    gw = GatewayProcess(str(work / "data"), extra_args=["--commitlog-file-size", FILE_SIZE,
                                                         *seaweed_s3.tier_args(bucket)]).start()
    try:
        admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=TIERED)])[TOPIC].result(30)
        p = Producer({"bootstrap.servers": gw.kafka_bootstrap, "linger.ms": 5, "batch.size": 16384})
        _send(p, OLD)
        time.sleep(0.3)
        instant = datetime.datetime.now(datetime.timezone.utc)
        time.sleep(0.3)
        _send(p, NEW)
        wait_for(lambda: list_offset(gw, TOPIC, 0, -4) > len(OLD) + 50, what="the reset instant's file deleted locally")
        yield gw, instant, str(work)
    finally:
        gw.stop()


def _send(p: Producer, values: list[bytes]) -> None:
    for v in values:
        p.produce(TOPIC, v)
        p.poll(0)
    assert p.flush(30) == 0


def iso(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def test_kafka_consumer_groups_to_datetime_on_the_tier(loaded):
    gw, instant, logs = loaded
    group = "bt-kafka"
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": group})
    try:
        c.commit(offsets=[TopicPartition(TOPIC, 0, len(OLD) + len(NEW))], asynchronous=False)
    finally:
        c.close()
    r = kafka_tool("kafka-consumer-groups", ["--bootstrap-server", gw.kafka_bootstrap, "--reset-offsets",
                                             "--group", group, "--topic", TOPIC, "--to-datetime", iso(instant),
                                             "--execute"], logs)
    rows = [row for row in table(r.stdout, "GROUP") if row.get("TOPIC") == TOPIC]
    assert r.returncode == 0 and rows, r.stdout + r.stderr
    assert int(rows[0]["NEW-OFFSET"]) == len(OLD), r.stdout
    assert list_offset(gw, TOPIC, 0, -4) > len(OLD)  # still only in the object store
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": group, "auto.offset.reset": "error"})
    c.subscribe([TOPIC])
    try:
        first = waiting.until(lambda: _message(c), 60, 0)
    finally:
        c.close()
    assert (first.offset(), first.value()) == (len(OLD), NEW[0])


def _message(c: Consumer):
    m = c.poll(1.0)
    if m is not None:
        assert m.error() is None, m.error()
    return m


def test_mqadmin_reset_offset_by_time_on_the_tier(loaded):
    gw, instant, logs = loaded
    got, lock = [], threading.Lock()

    def listener(msgs):
        with lock:
            got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    def received() -> list[bytes]:
        with lock:
            return list(got)

    c = PushConsumer("bt-rmq", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=0.5)
    c.subscribe(TOPIC, "*")
    c.register_listener(listener)
    c.start()
    try:
        waiting.until(lambda: len(received()) >= len(OLD) + len(NEW), 90, 0.2)
        assert received() == OLD + NEW  # every record, the older ones from the tier
        ms = int(instant.timestamp() * 1000)
        r = mqadmin(["resetOffsetByTime", "-n", gw.namesrv, "-g", "bt-rmq", "-t", TOPIC, "-s", str(ms)], logs)
        assert r.returncode == 0 and "Exception" not in r.stdout + r.stderr, r.stdout + r.stderr
        rows = [line.split() for line in r.stdout.splitlines()]
        assert [int(row[2]) for row in rows if len(row) == 3 and row[1] == "0"] == [len(OLD)], r.stdout
        waiting.until(lambda: len(received()) >= len(OLD) + 2 * len(NEW), 90, 0.2)
        assert received()[len(OLD) + len(NEW):] == NEW  # consumed again from the first NEW record
    finally:
        c.shutdown()
