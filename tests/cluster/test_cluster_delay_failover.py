"""Delayed and transactional messages whose queue changes leader before they are due (issue 13,
docs/cluster.md "System topics"): two real gateways on a real etcd and the native RocketMQ client.
The schedule and half topics are node-local, so the gateway that took the send delivers the
message when it falls due / is committed; by then the queue is led by the other gateway. The
message must reach the leader (a consumer there reads it exactly once) and the old leader, now
its follower, must not grow a diverging copy."""
from __future__ import annotations

import os
import threading
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from client import ConsumeFrom, LitePullConsumer, Message, MessageQueue, Producer, TransactionProducer, TransactionState
from clusters import require_etcd, start_cluster, wait_for
from codec.remoting import RequestCode
from raw_kafka import remoting_call

NODES = (1, 2)
# level 3 (10 s): time to move the queue before it is due; level 4 (20 s): time to kill and restart a gateway
LEVELS = "1s 5s 10s 20s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DELAY_LEVEL, DELAY_SECONDS = 3, 10


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    require_etcd()
    cluster = start_cluster(tmp_path_factory.mktemp("cluster-delay"), NODES, extra_args=[
        "--transaction-timeout-ms", "300", "--transaction-check-interval-ms", "500",
        "--transaction-check-max", "1000", "--message-delay-level", LEVELS])
    try:
        admin = AdminClient({"bootstrap.servers": cluster.gateways[1].kafka_bootstrap})
        wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == len(NODES), 60, "every gateway registered")
        yield cluster.etcd, cluster.gateways
    finally:
        cluster.stop()


def state(g, topic: str) -> dict:
    return remoting_call(g.remoting_port, RequestCode.REPLICA_STATE, {"topic": topic, "queueId": "0"})


def lead(etcd, gws, topic: str, leader: int) -> None:
    """Make `leader` lead queue 0 of `topic` (the other gateway its follower) and wait until both
    gateways act on it."""
    from gateway.admin.cli import main
    other = next(n for n in NODES if n != leader)
    assert main(["cluster", "reassign", "--etcd", etcd.url, topic, "0", "--replicas", f"{leader},{other}"]) == 0
    wait_for(lambda: state(gws[leader], topic).get("role") == "leader"
             and state(gws[other], topic).get("role") == "follower"
             and state(gws[other], topic).get("epoch") == state(gws[leader], topic).get("epoch"),
             what=f"node {leader} to lead {topic}")


def make_topic(etcd, gws, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": gws[1].kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=2)])[topic].result(10)
    lead(etcd, gws, topic, 1)


def read_at_leader(g, topic: str, want: bytes, settle: float = 3.0, **credentials) -> list[bytes]:
    """Every body a consumer reads from broker-2's queue 0 (from offset 0) until `want` has come
    and `settle` more seconds passed (a second copy would show up meanwhile). `credentials`: the
    consumer's access_key / secret_key on a secured cluster."""
    c = LitePullConsumer(f"{topic}-readers", g.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET,
                         **credentials).start()
    try:
        c.assign([MessageQueue(topic, "broker-2", 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 40
        while want not in got and time.monotonic() < deadline:
            got += [m.body for m in c.poll(1.0)]
        assert want in got, f"{want!r} never reached the leader (got {got})"
        end = time.monotonic() + settle
        while time.monotonic() < end:
            got += [m.body for m in c.poll(0.5)]
        return got
    finally:
        c.shutdown()


def same_log(gws, topic: str) -> bool:
    a, b = state(gws[1], topic), state(gws[2], topic)
    return a["logEnd"] == b["logEnd"] == 1


def test_a_delayed_message_reaches_the_new_leader_once(two):
    etcd, gws = two
    make_topic(etcd, gws, "delayed-moving")
    p = Producer("delay-move-pg", gws[1].namesrv).start()
    try:
        sent_at = time.monotonic()
        r = p.send(Message("delayed-moving", b"due-after-the-move", delay_level=DELAY_LEVEL))
    finally:
        p.shutdown()
    assert r.queue.broker_name == "broker-1"  # stored in gateway 1's schedule topic
    lead(etcd, gws, "delayed-moving", 2)
    assert time.monotonic() - sent_at < DELAY_SECONDS - 1, "the move took longer than the delay: nothing tested"
    assert read_at_leader(gws[2], "delayed-moving", b"due-after-the-move") == [b"due-after-the-move"]
    wait_for(lambda: same_log(gws, "delayed-moving"), what="the follower to hold the leader's log")


def test_a_transaction_committed_after_the_move_reaches_the_new_leader_once(two):
    etcd, gws = two
    make_topic(etcd, gws, "tx-moving")
    moved = threading.Event()
    p = TransactionProducer("tx-move-pg", gws[1].namesrv, local_transaction=lambda m, a: TransactionState.UNKNOWN,
                            check_listener=lambda m: TransactionState.COMMIT if moved.is_set()
                            else TransactionState.UNKNOWN).start()
    try:
        r, _ = p.send_in_transaction(Message("tx-moving", b"committed-after-the-move"))
        assert r.queue.broker_name == "broker-1"  # the half waits in gateway 1's half topic
        lead(etcd, gws, "tx-moving", 2)
        moved.set()  # the next check-back commits it at gateway 1
        got = read_at_leader(gws[2], "tx-moving", b"committed-after-the-move")
    finally:
        p.shutdown()
    assert got == [b"committed-after-the-move"]
    wait_for(lambda: same_log(gws, "tx-moving"), what="the follower to hold the leader's log")


@pytest.mark.skipif(not os.environ.get("CLUSTER_LONG"), reason="long: make cluster-long")
def test_a_delayed_message_of_a_killed_leader_reaches_the_elected_one_once(two):
    """kill -9 of the gateway holding the delayed message (and leading its queue): the other is
    elected; the killed one comes back with its data dir before the message is due, as a follower,
    and its scheduler delivers the message to the new leader."""
    etcd, gws = two
    make_topic(etcd, gws, "delayed-killed")
    wait_for(lambda: len(state(gws[1], "delayed-killed").get("isr") or []) == 2, what="both replicas in sync")
    p = Producer("delay-kill-pg", gws[1].namesrv).start()
    try:
        sent_at = time.monotonic()
        r = p.send(Message("delayed-killed", b"due-after-the-kill", delay_level=4))
    finally:
        p.shutdown()
    assert r.queue.broker_name == "broker-1"
    gws[1].kill9()
    wait_for(lambda: state(gws[2], "delayed-killed").get("role") == "leader", what="gateway 2 elected")
    gws[1].start()  # its node id is free once its lease expired, which the election waited for
    wait_for(lambda: state(gws[1], "delayed-killed").get("role") == "follower", what="gateway 1 to follow")
    assert time.monotonic() - sent_at < 19, "the restart took longer than the delay: nothing tested"
    assert read_at_leader(gws[2], "delayed-killed", b"due-after-the-kill") == [b"due-after-the-kill"]
    wait_for(lambda: same_log(gws, "delayed-killed"), what="the follower to hold the leader's log")


def test_a_kafka_batch_with_gaps_is_replicated_as_stored(two):
    """A Kafka batch mixing immediate and delayed records (acks=all), stored with gaps at the
    delayed ones' offsets (docs/mapping.md "Produce offsets are exact"), is replicated as it is: once
    the follower leads, each immediate record is at the offset the produce response gave it, each
    delayed one (delivered at the old leader after the move) once, at a later offset."""
    from confluent_kafka import Consumer, Producer as KafkaProducer, TopicPartition
    etcd, gws = two
    topic = "kafka-gaps-moving"
    make_topic(etcd, gws, topic)
    values = [(f"r{i}", [("DELAY", str(DELAY_LEVEL).encode())] if i % 3 == 1 else None) for i in range(7)]
    reported = {}
    p = KafkaProducer({"bootstrap.servers": gws[1].kafka_bootstrap, "linger.ms": 500, "acks": "all"})
    for value, headers in values:
        p.produce(topic, value=value.encode(), partition=0, headers=headers,
                  on_delivery=lambda err, m: reported.setdefault(m.value().decode(), None if err else m.offset()))
    assert p.flush(30) == 0
    lead(etcd, gws, topic, 2)
    c = Consumer({"bootstrap.servers": gws[2].kafka_bootstrap, "group.id": f"{topic}-g", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    stored = {}
    deadline = time.monotonic() + 60
    try:
        while len(stored) < len(values) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                stored[m.offset()] = m.value().decode()
    finally:
        c.close()
    assert sorted(stored.values()) == sorted(v for v, _h in values)
    for value, headers in values:
        if headers is None:
            assert stored.get(reported[value]) == value
        else:
            assert reported[value] not in stored and {v: o for o, v in stored.items()}[value] >= len(values)
