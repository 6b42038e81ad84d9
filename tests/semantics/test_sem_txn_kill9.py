"""Transactions across a kill -9, against a real `python -m gateway` process: nothing a producer
decided is lost, nothing is delivered twice, undecided halves are settled by the check-back
after the restart (native client), and an open Kafka transaction is aborted, never half-applied.

Short transaction timing on the command line (timeout 1 s, a check round every 0.3 s) keeps each
test to a few seconds; `--flush sync` makes every acknowledged outcome durable."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer as KafkaProducer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from client import (Admin, ConsumeFrom, LitePullConsumer, Message, MessageQueue, TransactionProducer,
                    TransactionState)
from gateway_process import ROOT, TEST_SHARDS
from semantics.routing import HALF_TOPIC, OP_TOPIC
from semantics_fixtures import wait_for
from shard_aware import broker_names

TX_ARGS = ["--transaction-timeout-ms", "1000", "--transaction-check-interval-ms", "300",
           "--transaction-check-max", "100"]
QUEUES = 4


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _queues(topic: str, n: int = QUEUES) -> list[MessageQueue]:
    """The topic's queues as RocketMQ names them: broker-a's n, or under --shards each broker's own
    (the cluster places them round-robin: broker-local ids from 0, tests/shard_aware.py)."""
    names = broker_names()
    assert n % len(names) == 0, "a queue count every broker gets the same share of"
    return [MessageQueue(topic, b, q) for b in names for q in range(n // len(names))]


def _stored(admin: Admin, topic: str) -> int:
    """Messages appended to the topic's queues (duplicates included)."""
    return sum(admin.max_offset(mq) for mq in _queues(topic))


def _system_max(admin: Admin, topic: str) -> int:
    """A system topic's (half, op) end, added over the brokers: under --shards each shard keeps its own."""
    return sum(admin.max_offset(MessageQueue(topic, b, 0)) for b in broker_names())


def _read_all(namesrv: str, topic: str, want: int, timeout: float = 15.0, linger: float = 1.5):
    """Every message of the topic from the first offset, polled until `want` arrived and then
    `linger` seconds more (so extra copies would show up too)."""
    c = LitePullConsumer(_name("cg"), namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    got = []
    try:
        c.assign(_queues(topic))
        deadline = time.monotonic() + timeout
        while len(got) < want and time.monotonic() < deadline:
            got += c.poll(0.5)
        deadline = time.monotonic() + linger
        while time.monotonic() < deadline:
            got += c.poll(0.3)
    finally:
        c.shutdown()
    return got


def _assert_exactly_once(got, expected_bodies: set[bytes]) -> None:
    places = [(m.queue_id, m.queue_offset) for m in got]
    assert len(places) == len(set(places)), f"a (queue, offset) delivered twice: {sorted(places)}"
    bodies = sorted(m.body for m in got)
    assert bodies == sorted(expected_bodies), f"got {bodies}, want {sorted(expected_bodies)}"


def _new_producer(group: str, namesrv: str, topic: str, check) -> TransactionProducer:
    """A transaction producer of `group` that the broker knows as live: its registration rides on
    a first transaction it rolls back (the probe must never become visible)."""
    p = TransactionProducer(group, namesrv, local_transaction=lambda m, a: TransactionState.ROLLBACK,
                            check_listener=check).start()
    _r, state = p.send_in_transaction(Message(topic, b"probe"))
    assert state == TransactionState.ROLLBACK
    return p


# ---------------------------------------------------------------------------------------------
# 1. Native: commits, rollbacks and undecided halves across a kill -9 of the gateway


@pytest.mark.timeout(90)
def test_native_outcomes_survive_kill9_and_unknown_resolved_by_check_back(gateway_factory):
    g = gateway_factory(flush="sync", extra_args=TX_ARGS)
    topic, group = _name("TxK9"), _name("pg-k9")
    admin = Admin(g.namesrv).start()
    admin.create_topic(topic, QUEUES)
    ops_before = _system_max(admin, OP_TOPIC)

    plan = {}  # body -> local transaction answer
    for i in range(18):
        plan[b"commit-%d" % i if i % 2 == 0 else b"rollback-%d" % i] = \
            TransactionState.COMMIT if i % 2 == 0 else TransactionState.ROLLBACK
    plan[b"unknown-a"] = plan[b"unknown-b"] = TransactionState.UNKNOWN
    committed = {b for b, s in plan.items() if s == TransactionState.COMMIT}
    rolled_back = {b for b, s in plan.items() if s == TransactionState.ROLLBACK}
    unknown = {b for b, s in plan.items() if s == TransactionState.UNKNOWN}

    p1 = TransactionProducer(group, g.namesrv, local_transaction=lambda m, a: plan[m.body],
                             check_listener=lambda m: TransactionState.UNKNOWN).start()
    ids = {}
    for body in plan:
        r, state = p1.send_in_transaction(Message(topic, body))
        assert state == plan[body]
        ids[body] = r.msg_id
    # END_TRANSACTION is oneway: wait until every decided outcome is in the op log (durable with
    # --flush sync), then shut the producer down and kill the gateway with the unknown ones open.
    decided = len(committed) + len(rolled_back)
    assert wait_for(lambda: _system_max(admin, OP_TOPIC) - ops_before == decided, 15)
    assert _stored(admin, topic) == len(committed)
    p1.shutdown()
    admin.shutdown()
    g.kill9()

    g.start()
    admin = Admin(g.namesrv).start()
    try:
        assert _stored(admin, topic) == len(committed)  # nothing lost, nothing re-applied by recovery
        asked, lock = [], threading.Lock()

        def check(msg):  # the local transaction's truth, as an application would answer
            with lock:
                asked.append(msg.body)
            return TransactionState.ROLLBACK if msg.body in rolled_back or msg.body == b"probe" \
                else TransactionState.COMMIT

        p2 = _new_producer(group, g.namesrv, topic, check)
        try:
            assert wait_for(lambda: _stored(admin, topic) == len(committed) + len(unknown), 20)
            time.sleep(1.0)  # a few more check rounds: nothing more may appear
            assert _stored(admin, topic) == len(committed) + len(unknown)
        finally:
            p2.shutdown()
        # Only the halves left open at the kill were asked about: decided outcomes survived.
        assert set(asked) == unknown, asked
        got = _read_all(g.namesrv, topic, len(committed) + len(unknown))
    finally:
        admin.shutdown()
    _assert_exactly_once(got, committed | unknown)
    for m in got:
        assert m.msg_id == ids[m.body] and m.properties.get("TRAN_MSG") == "true"


# ---------------------------------------------------------------------------------------------
# 2. Native: the producer dies (kill -9) before deciding; another of its group answers the check


PRODUCER_SCRIPT = r"""
import sys, time
from client import Message, TransactionProducer, TransactionState

namesrv, topic, group = sys.argv[1:4]

def local(msg, arg):
    print("DECIDING", flush=True)  # the half is stored; the process is killed in here
    time.sleep(600)

p = TransactionProducer(group, namesrv, local_transaction=local,
                        check_listener=lambda m: TransactionState.UNKNOWN).start()
p.send_in_transaction(Message(topic, b"orphan"))
"""


@pytest.mark.timeout(90)
def test_producer_killed_before_deciding_then_another_of_its_group_answers(gateway_factory):
    g = gateway_factory(flush="sync", extra_args=TX_ARGS)
    topic, group = _name("TxOrphan"), _name("pg-orphan")
    admin = Admin(g.namesrv).start()
    try:
        admin.create_topic(topic, QUEUES)
        halves_before = _system_max(admin, HALF_TOPIC)
        proc = subprocess.Popen([sys.executable, "-c", PRODUCER_SCRIPT, g.namesrv, topic, group], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": ROOT})
        try:
            line = proc.stdout.readline()
            assert line.strip() == b"DECIDING", line + proc.stdout.read()
        finally:
            proc.kill()  # SIGKILL: no END_TRANSACTION, no UNREGISTER_CLIENT
            proc.wait()
            proc.stdout.close()
        assert _system_max(admin, HALF_TOPIC) == halves_before + 1
        # Past the transaction timeout the check-back finds no live producer of the group: the half
        # stays open (nothing visible) until one comes.
        time.sleep(1.8)
        assert _stored(admin, topic) == 0

        asked, lock = [], threading.Lock()

        def check(msg):
            with lock:
                asked.append(msg.body)
            return TransactionState.COMMIT if msg.body == b"orphan" else TransactionState.ROLLBACK

        p = _new_producer(group, g.namesrv, topic, check)
        try:
            assert wait_for(lambda: _stored(admin, topic) == 1, 20)
            time.sleep(1.0)  # a few more check rounds: nothing more may appear
            assert _stored(admin, topic) == 1
        finally:
            p.shutdown()
        assert set(asked) == {b"orphan"}, asked
        got = _read_all(g.namesrv, topic, 1)
    finally:
        admin.shutdown()
    _assert_exactly_once(got, {b"orphan"})


# ---------------------------------------------------------------------------------------------
# 3. Kafka: kill -9 with a transaction open; it is aborted, the committed one is there once


def _watermark(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("w")})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), 15)[1]
    finally:
        c.close()


def _kafka_read(bootstrap: str, topic: str, partitions: int, want: int, isolation: str,
                timeout: float = 15.0, linger: float = 1.5):
    """(partition, offset, value) of every record from the start: polled until `want` arrived,
    then `linger` seconds more (so extra copies would show up too)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("g"), "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    try:
        deadline = time.monotonic() + timeout
        lingering = False
        while time.monotonic() < deadline:
            if not lingering and len(got) >= want:
                lingering, deadline = True, time.monotonic() + linger
            m = c.poll(0.3)
            if m is not None:
                assert m.error() is None, m.error()
                got.append((m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    return got


def _half_outcomes(bootstrap: str) -> dict[int, str]:
    """{half offset: outcome} from the whole op log (`RMQ_SYS_TRANS_OP_HALF_TOPIC`, read over Kafka:
    body "42" or "42,43,", header TRAN_OUTCOME); a half decided twice fails."""
    end = _watermark(bootstrap, OP_TOPIC)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("ops"), "enable.auto.commit": False})
    c.assign([TopicPartition(OP_TOPIC, 0, 0)])
    outcomes: dict[int, str] = {}
    seen = 0
    try:
        deadline = time.monotonic() + 10
        while seen < end and time.monotonic() < deadline:
            m = c.poll(0.3)
            if m is None:
                continue
            assert m.error() is None, m.error()
            seen = m.offset() + 1
            outcome = dict(m.headers() or []).get("TRAN_OUTCOME", b"").decode()
            for part in m.value().decode().split(","):
                if part.strip():
                    assert int(part) not in outcomes, f"half {part} decided twice"
                    outcomes[int(part)] = outcome
    finally:
        c.close()
    assert seen == end, "op log not read to its end"
    return outcomes


@pytest.mark.timeout(120)
def test_kafka_open_transaction_aborted_after_kill9(gateway_factory):
    g = gateway_factory(flush="sync", extra_args=TX_ARGS)
    bootstrap = g.kafka_bootstrap
    topic, tid = _name("ktx"), _name("tid")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(15)
    # One process keeps a Kafka transaction's state in its half topic and op log (docs/mapping.md);
    # a cluster, so the shards of --shards, in the partitions' own logs (docs/cluster-txn-layout.md):
    # the half-record checks are one process's, the reads below check the outcome either way.
    halves = TEST_SHARDS == 1
    halves_start = _watermark(bootstrap, HALF_TOPIC) if halves else 0

    p = KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5,
                       "transaction.timeout.ms": 1000})
    p.init_transactions(15)
    p.begin_transaction()
    a_values = {b"A%d" % i for i in range(6)}
    for i, v in enumerate(sorted(a_values)):
        p.produce(topic, value=v, partition=i % 2)
    p.commit_transaction(15)
    halves_a = _watermark(bootstrap, HALF_TOPIC) if halves else 0

    p.begin_transaction()
    for i in range(4):
        p.produce(topic, value=b"B%d" % i, partition=i % 2)
    p.flush(15)
    halves_b = _watermark(bootstrap, HALF_TOPIC) if halves else 2
    assert halves_b - halves_a == 2  # B is stored before the kill (one half record per partition)
    if not halves:  # B is stored before the kill: its records in the partitions, above the LSO
        assert len(_kafka_read(bootstrap, topic, 2, 10, "read_uncommitted")) == 10
    g.kill9()
    g.start()

    # The transaction open at the kill cannot be committed afterwards: its producer is fenced
    # (a commit answered "ok" while B is rolled back would lose B silently).
    with pytest.raises(KafkaException):
        p.commit_transaction(15)
    # A new producer with the same transactional.id works; B stays aborted.
    p2 = KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})
    p2.init_transactions(15)
    p2.begin_transaction()
    p2.produce(topic, value=b"C0", partition=0)
    p2.commit_transaction(15)
    if halves:  # past its timeout the check-back rolls B back (B halves: [halves_a, halves_b))
        assert wait_for(lambda: all(h in _half_outcomes(bootstrap) for h in range(halves_a, halves_b)), 20)
        time.sleep(0.6)  # a couple more check rounds
        outcomes = _half_outcomes(bootstrap)
        assert all(outcomes.get(h) == "commit" for h in range(halves_start, halves_a)), outcomes
        assert all(outcomes.get(h) == "rollback" for h in range(halves_a, halves_b)), outcomes
        assert outcomes.get(halves_b) == "commit" and len(outcomes) == halves_b + 1 - halves_start, outcomes

    for isolation in ("read_committed", "read_uncommitted"):  # B's aborted records stay in the log
        want = a_values | {b"C0"} | (set() if isolation == "read_committed" else {b"B%d" % i for i in range(4)})
        got = _kafka_read(bootstrap, topic, 2, len(want), isolation)
        places = [(part, off) for part, off, _v in got]
        assert len(places) == len(set(places)), (isolation, got)
        assert sorted(v for _p, _o, v in got) == sorted(want), (isolation, got)
        # Kafka's layout (docs/mapping.md): records at their produce-time offsets, C0 after A's and B's
        assert max(o for pp, o, v in got if pp == 0 and v != b"C0") < dict(((v, o) for _p, o, v in got))[b"C0"]
