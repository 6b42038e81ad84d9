"""DescribeProducers, ListTransactions, DescribeTransactions and DescribeLogDirs through Kafka's own
Java tools (kafka-transactions: list / describe / describe-producers; kafka-log-dirs --describe, all
on the Java Admin client) and the raw protocol; idle producers expire by producer.id.expiration.ms.
Checked against a real Kafka 4.x first (KAFKA_REFERENCE_BOOTSTRAP)."""
from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from gateway_process import GatewayProcess
from kafka_raw import RawClient
from kafka_target import REFERENCE, Target, eventually, gateway_only
from shard_aware import leader_address

from compat.jvm import run_tool
from compat.tools import table

TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, DESCRIBE_LOG_DIRS = 61, 65, 66, 35
EXPIRATION_MS = 2000  # the expiry test's own gateway; the module's gateway keeps Kafka's default


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    if REFERENCE:
        yield Target(REFERENCE, None)
        return
    g = GatewayProcess(str(tmp_path_factory.mktemp("admin-apis") / "data")).start()
    yield Target(g.kafka_bootstrap, g)
    g.stop()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return str(tmp_path_factory.mktemp("admin-apis-logs"))


def _tool(target, logs, main: str, *args: str) -> str:
    r = run_tool("kafkatools", main, ["--bootstrap-server", target.bootstrap, *args], logs)
    assert r.returncode == 0, f"{main} {args} -> {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def _topic(target, partitions: int = 2) -> str:
    name = f"aa-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)
    return name


def _rows(out: str, first: str) -> list[dict]:
    return table(out, first)


@pytest.fixture(scope="module")
def open_txn(target):
    """A transactional producer with a transaction in progress on partition 0 of a fresh topic."""
    topic = _topic(target)
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": target.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"in-txn", partition=0)
    p.flush(30)
    yield topic, tid, p
    p.abort_transaction(30)


def test_describe_and_list_an_ongoing_transaction(target, logs, open_txn):
    topic, tid, _p = open_txn
    out = _tool(target, logs, TRANSACTIONS, "describe", "--transactional-id", tid)
    row = _rows(out, "CoordinatorId")[0]
    assert row["TransactionalId"] == tid and row["TransactionState"] == "Ongoing", out
    assert row["TopicPartitions"] == f"{topic}-0", out
    assert row["TransactionTimeoutMs"] == "60000", out
    listed = {r["TransactionalId"]: r for r in _rows(_tool(target, logs, TRANSACTIONS, "list"), "TransactionalId")}
    assert listed[tid]["TransactionState"] == "Ongoing"
    assert listed[tid]["ProducerId"] == row["ProducerId"]


def test_states_after_commit_and_filters(target, logs):
    topic = _topic(target)
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": target.bootstrap, "transactional.id": tid})
    p.init_transactions(30)
    c = target.raw()
    r = c.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid, "no-such-id"]})["transaction_states"]
    assert (r[0]["error_code"], r[0]["transaction_state"], r[0]["topics"]) == (0, "Empty", [])
    assert r[0]["transaction_start_time_ms"] == -1
    assert r[1]["error_code"] == 105  # TRANSACTIONAL_ID_NOT_FOUND
    p.begin_transaction()
    p.produce(topic, value=b"x", partition=1)
    p.commit_transaction(30)
    state = eventually(lambda: _state_is(c, tid, "CompleteCommit"))
    assert state["producer_epoch"] >= 0 and state["topics"] == [] and state["transaction_start_time_ms"] > 0
    body = {"state_filters": ["CompleteCommit", "NoSuchState"], "producer_id_filters": [], "duration_filter": -1,
            "transactional_id_pattern": None}
    got = c.call(LIST_TRANSACTIONS, 1, body)
    assert got["unknown_state_filters"] == ["NoSuchState"]
    assert tid in [t["transactional_id"] for t in got["transaction_states"]]
    body = {"state_filters": ["Ongoing"], "producer_id_filters": [], "duration_filter": -1,
            "transactional_id_pattern": None}
    assert tid not in [t["transactional_id"] for t in c.call(LIST_TRANSACTIONS, 1, body)["transaction_states"]]
    body = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1,
            "transactional_id_pattern": "tx-nomatch.*"}
    assert c.call(LIST_TRANSACTIONS, 2, body)["transaction_states"] == []
    c.close()


def _state_is(c, tid: str, want: str) -> dict:
    state = c.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid]})["transaction_states"][0]
    assert state["transaction_state"] == want, state
    return state


def test_describe_producers(target, logs):
    topic = _topic(target)
    p = Producer({"bootstrap.servers": target.bootstrap, "enable.idempotence": True, "linger.ms": 0})
    for i in range(3):
        p.produce(topic, value=b"v%d" % i, partition=1)
        p.flush(10)
    out = _tool(target, logs, TRANSACTIONS, "describe-producers", "--topic", topic, "--partition", "1")
    rows = _rows(out, "ProducerId")
    assert len(rows) == 1, out
    assert rows[0]["LastSequence"] == "2" and rows[0]["ProducerEpoch"] == "0", out
    assert int(rows[0]["LastTimestamp"]) > 0 or rows[0]["LastTimestamp"] not in ("", "-1"), out
    empty = _tool(target, logs, TRANSACTIONS, "describe-producers", "--topic", topic, "--partition", "0")
    assert _rows(empty, "ProducerId") == [], empty


@gateway_only
def test_idle_producer_expires(tmp_path):
    """A gateway of its own with a short expiry: a Java tool's start on a loaded machine can take
    longer than any expiry short enough for the other tests to wait out."""
    g = GatewayProcess(str(tmp_path / "data"), extra_args=["--producer-id-expiration-ms", str(EXPIRATION_MS)]).start()
    try:
        target = Target(g.kafka_bootstrap, g)
        topic = _topic(target)
        p = Producer({"bootstrap.servers": target.bootstrap, "enable.idempotence": True, "linger.ms": 0})
        p.produce(topic, value=b"v", partition=0)
        p.flush(10)
        c = RawClient(leader_address(target.bootstrap, topic, 0), timeout=60)  # only the leader knows
        body = {"topics": [{"name": topic, "partition_indexes": [0]}]}
        assert len(c.call(DESCRIBE_PRODUCERS, 0, body)["topics"][0]["partitions"][0]["active_producers"]) == 1
        time.sleep(EXPIRATION_MS / 1000 + 0.5)
        assert c.call(DESCRIBE_PRODUCERS, 0, body)["topics"][0]["partitions"][0]["active_producers"] == []
        c.close()
    finally:
        g.stop()


def test_log_dirs_report_sizes(target, logs):
    topic = _topic(target)
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    for _ in range(20):
        p.produce(topic, value=b"x" * 1000, partition=0)
        p.flush(10)
    out = _tool(target, logs, LOG_DIRS, "--describe", "--topic-list", topic)
    doc = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    sizes = {part["partition"]: part["size"] for d in doc["brokers"] for ld in d["logDirs"]
             for part in ld["partitions"]}
    assert set(sizes) == {f"{topic}-0", f"{topic}-1"}, doc
    assert 20 * 1000 < sizes[f"{topic}-0"] < 20 * 1400 and sizes[f"{topic}-1"] == 0, sizes
    c = target.raw()
    r = c.call(DESCRIBE_LOG_DIRS, 4, {"topics": [{"topic": topic, "partitions": [0, 7]}]})
    assert r["error_code"] == 0
    result = r["results"][0]
    assert result["total_bytes"] >= result["usable_bytes"] > 0
    assert [p["partition_index"] for t in result["topics"] for p in t["partitions"]] == [0]
    c.close()


def test_internal_topics_are_marked(target, open_txn):
    """Kafka marks its own topics (__transaction_state) internal; the gateway marks RocketMQ's
    (RMQ_SYS_*, SCHEDULE_TOPIC_XXXX, %RETRY%/%DLQ% groups, TBW102)."""
    topic, _tid, _p = open_txn
    internal = "__transaction_state" if REFERENCE else "RMQ_SYS_TRANS_HALF_TOPIC"
    c = target.raw()
    body = {"topics": [{"name": n, "topic_id": bytes(16)} for n in (topic, internal)],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}

    def listing() -> dict:
        out = {t["name"]: (t["error_code"], t["is_internal"]) for t in c.call(3, 12, body)["topics"]}
        assert all(code == 0 for code, _internal in out.values()), out  # until Kafka's metadata has both
        return out
    listed = eventually(listing)
    c.close()
    assert listed == {topic: (0, False), internal: (0, True)}
