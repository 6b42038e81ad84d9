"""Replication between real gateway processes with a static role assignment (REPLICA_ROLE): copies in
order at identical queue offsets, acks=all waiting for the in-sync set, catch-up, the epoch rule."""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import pytest
from replicas import (LAG_MS, Kafka, batch, fetched_values, follow, lead, node, queue_entries, remoting, replicate, set_role,
                      state, wait_until)

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from codec.remoting import RemotingCommand, RequestCode, ResponseCode
from codec.remoting.message import properties_to_string

NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT = 6, 7
# A paused follower last counted as caught up at its last fetch, up to one long poll (500 ms) before
# the pause: acknowledgements waiting for it are held at least the lag time minus that.
MIN_HELD_S = LAG_MS / 1000 - 0.6


def _topic() -> str:
    return "repl-" + uuid.uuid4().hex[:10]


@pytest.fixture
def nodes(gateway_factory):
    made = []  # each node its own data dir, also across calls (two gateways may not share one: its lock)

    def make(n: int, flush: str = "async"):
        new = [gateway_factory(flush=flush, name=f"node{len(made) + i}",
                               extra_args=["--replica-lag-time-max-ms", str(LAG_MS), "--default-partitions", "1"])
               for i in range(n)]
        made.extend(new)
        return new
    return make


def _pair(nodes, topic: str, flush: str = "async"):
    leader, follower = nodes(2, flush)
    replicate(leader, [follower], topic, epoch=1)
    return leader, follower


def test_entries_replicate_in_order_with_identical_offsets_and_bodies(nodes, tmp_path):
    topic = _topic()
    leader, follower = _pair(nodes, topic)
    k = Kafka(leader)
    for i in range(20):
        assert k.produce(topic, batch([b"k%d-%d" % (i, j) for j in range(i % 3 + 1)])) == (0, sum(
            j % 3 + 1 for j in range(i)))
    total = sum(i % 3 + 1 for i in range(20))
    wait_until(lambda: state(follower, topic)["highWatermark"] == total, what="follower caught up")
    assert state(leader, topic)["logEnd"] == state(follower, topic)["logEnd"] == total
    on_leader = fetched_values(k, topic)
    on_follower = fetched_values(Kafka(follower), topic)
    assert on_follower == on_leader and len(on_leader) == total
    leader.stop()
    follower.stop()
    ours, theirs = queue_entries(leader.data_dir, topic), queue_entries(follower.data_dir, topic)
    assert [(q, b) for q, b, _ in theirs] == [(q, b) for q, b, _ in ours]


def test_a_follower_refuses_client_writes(nodes):
    topic = _topic()
    leader, follower = _pair(nodes, topic)
    assert Kafka(follower).produce(topic, batch([b"x"]))[0] == NOT_LEADER_OR_FOLLOWER


def test_acks_all_waits_for_a_paused_follower_until_it_leaves_the_isr(nodes):
    topic = _topic()
    leader, follower = _pair(nodes, topic)
    k = Kafka(leader)
    assert k.produce(topic, batch([b"warm"])) == (0, 0)
    wait_until(lambda: state(follower, topic)["logEnd"] == 1, what="warm-up replicated")
    os.kill(follower.proc.pid, signal.SIGSTOP)
    paused = time.monotonic()
    try:
        assert k.produce(topic, batch([b"acks1"]), acks=1) == (0, 1)  # the leader alone
        assert k.produce(topic, batch([b"timed-out"]), timeout_ms=300)[0] == REQUEST_TIMED_OUT  # stored, not acked
        assert k.produce(topic, batch([b"acks-all"])) == (0, 3)
        assert time.monotonic() - paused >= MIN_HELD_S  # held until the follower left the ISR
        assert state(leader, topic)["isr"] == [node(leader)]
        # Readers saw nothing past the high watermark meanwhile; now it is the log end.
        assert [v for _, v in fetched_values(k, topic)] == [b"warm", b"acks1", b"timed-out", b"acks-all"]
    finally:
        os.kill(follower.proc.pid, signal.SIGCONT)
    wait_until(lambda: state(leader, topic)["isr"] == sorted([node(leader), node(follower)]), what="ISR rejoin")
    began = time.monotonic()
    assert k.produce(topic, batch([b"again"])) == (0, 4)
    assert time.monotonic() - began < LAG_MS / 1000


def test_readers_see_only_up_to_the_high_watermark(nodes):
    topic = _topic()
    leader, follower = _pair(nodes, topic)
    k = Kafka(leader)
    assert k.produce(topic, batch([b"a"])) == (0, 0)
    wait_until(lambda: state(follower, topic)["logEnd"] == 1, what="replicated")
    os.kill(follower.proc.pid, signal.SIGSTOP)
    try:
        assert k.produce(topic, batch([b"b"]), acks=1) == (0, 1)
        part = k.fetch(topic, 0)
        assert part["high_watermark"] == 1
        assert [v for _, v in fetched_values(k, topic)] == [b"a"]
        # a consumer that read up to the old leader's high watermark may be ahead of a new leader's:
        # Kafka answers such a fetch (at most the log end) empty; before, OFFSET_OUT_OF_RANGE, and
        # librdkafka reset the position to the earliest offset (a group's commit went back: faults)
        part = k.fetch(topic, 2)
        assert (part["error_code"], part["records"] or b"") == (0, b"")
        pull = remoting(leader, RequestCode.PULL_MESSAGE, {
            "consumerGroup": "g", "topic": topic, "queueId": "0", "queueOffset": "1", "maxMsgNums": "32",
            "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"})
        assert (pull.code, pull.ext_fields["maxOffset"]) == (ResponseCode.PULL_NOT_FOUND, "1")
    finally:
        os.kill(follower.proc.pid, signal.SIGCONT)
    wait_until(lambda: k.fetch(topic, 0)["high_watermark"] == 2, what="high watermark after resume")


def test_sync_master_send_waits_for_the_follower(nodes):
    topic = _topic()
    leader, follower = _pair(nodes, topic, flush="sync")
    send = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={
        "a": "pg", "b": topic, "c": "TBW102", "d": "1", "e": "0", "f": "0", "g": str(int(time.time() * 1000)),
        "h": "0", "i": properties_to_string({"KEYS": "k1"}), "j": "0", "k": "false"})
    resp = remoting(leader, send.code, send.ext_fields, b"hello")
    assert resp.code == 0, resp.remark
    assert state(follower, topic)["logEnd"] == 1  # acknowledged only once the follower had it
    os.kill(follower.proc.pid, signal.SIGSTOP)
    paused = time.monotonic()
    try:
        resp = remoting(leader, send.code, send.ext_fields, b"world")
        assert resp.code == 0 and time.monotonic() - paused >= MIN_HELD_S
    finally:
        os.kill(follower.proc.pid, signal.SIGCONT)


def test_a_restarted_follower_catches_up(nodes):
    topic = _topic()
    leader, follower = _pair(nodes, topic)
    k = Kafka(leader)
    assert k.produce(topic, batch([b"before"])) == (0, 0)
    wait_until(lambda: state(follower, topic)["logEnd"] == 1, what="replicated")
    follower.stop()
    n = 2000
    for i in range(n // 100):
        assert k.produce(topic, batch([b"v%05d" % (i * 100 + j) for j in range(100)]), acks=1)[0] == 0
    # A follower is out of sync once it has not caught up for the lag time (not while it is caught up).
    wait_until(lambda: state(leader, topic)["isr"] == [node(leader)], what="ISR shrink")
    follower.start()
    began = time.monotonic()
    follow(follower, leader, topic, epoch=1)
    wait_until(lambda: state(follower, topic)["logEnd"] == n + 1, what="catch-up")
    took = time.monotonic() - began
    wait_until(lambda: node(follower) in state(leader, topic)["isr"], what="rejoin")
    assert fetched_values(Kafka(follower), topic) == fetched_values(k, topic)
    print(f"catch-up of {n} records in 20 batches: {took:.2f} s")


def test_a_follower_below_the_leaders_log_start_starts_there(nodes):
    """A follower whose end is below the leader's log start (DeleteRecords here; in a cluster, local
    deletion of an untiered queue such as a carried-forward pop journal) is answered
    OFFSET_OUT_OF_RANGE with that start and begins its copy there, as Kafka's follower does
    (truncateFullyAndStartAt); before, it asked from its end for ever and copied nothing."""
    topic = _topic()
    leader, follower = nodes(2)
    lead(leader, [follower], topic, epoch=1, isr=[])
    k = Kafka(leader)
    for i in range(10):  # one entry each: a follower starts at an entry's first offset
        assert k.produce(topic, batch([b"v%d" % i]), acks=1) == (0, i)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{leader.kafka_port}"})
    assert list(admin.delete_records([TopicPartition(topic, 0, 6)]).values())[0].result(20).low_watermark == 6
    follow(follower, leader, topic, epoch=1)
    wait_until(lambda: state(follower, topic)["logEnd"] == 10, what="the follower's copy from the leader's start")
    copied = queue_entries_of(follower, topic)
    assert [q for q, _b, _p in copied] == [6, 7, 8, 9] and all(b"v%d" % q in b for q, b, _p in copied)


def queue_entries_of(gw, topic: str):
    gw.stop()
    return queue_entries(gw.data_dir, topic)


def test_a_diverged_follower_truncates_by_the_epoch_rule(nodes):
    """Old leader A wrote a suffix nobody copied; B became leader (epoch 2) and wrote its own; A,
    following B, must drop its suffix and copy B's at the same offsets."""
    topic = _topic()
    a, b = _pair(nodes, topic)
    ka, kb = Kafka(a), Kafka(b)
    assert ka.produce(topic, batch([b"shared-0", b"shared-1"])) == (0, 0)
    wait_until(lambda: state(b, topic)["logEnd"] == 2, what="shared prefix replicated")
    set_role(b, topic, "none", 1)  # b stops copying (a partition) ...
    assert ka.produce(topic, batch([b"a-only-2", b"a-only-3", b"a-only-4"]), acks=1) == (0, 2)
    lead(b, [a], topic, epoch=2, isr=[])  # ... and is elected: epoch 2 starts at its end, 2
    assert kb.produce(topic, batch([b"b-2"])) == (0, 2)
    follow(a, b, topic, epoch=2)
    wait_until(lambda: state(a, topic)["logEnd"] == 3 and state(a, topic)["epochs"] == [[1, 0], [2, 2]],
               what="a truncated and caught up")
    assert [v for _, v in fetched_values(Kafka(b), topic)] == [b"shared-0", b"shared-1", b"b-2"]
    wait_until(lambda: node(a) in state(b, topic)["isr"], what="a in sync")
    assert [v for _, v in fetched_values(ka, topic)] == [b"shared-0", b"shared-1", b"b-2"]
    a.restart()  # the cut stays cut across a restart (the checkpoint moved past it)
    assert [v for _, v in fetched_values(Kafka(a), topic)] == [b"shared-0", b"shared-1", b"b-2"]


def test_a_stale_leader_is_fenced(nodes):
    topic = _topic()
    a, b = _pair(nodes, topic)
    ka = Kafka(a)
    assert ka.produce(topic, batch([b"one"])) == (0, 0)
    wait_until(lambda: state(b, topic)["logEnd"] == 1, what="replicated")
    # b is elected in epoch 2 while a still thinks it leads in epoch 1; a third party c follows b.
    c = nodes(1)[0]
    lead(b, [a, c], topic, epoch=2, isr=[])
    follow(c, b, topic, epoch=2)
    wait_until(lambda: state(c, topic)["logEnd"] == 1, what="c caught up with b")
    # A replica of the new epoch that fetches from a fences it: a refuses writes from then on.
    follow(c, a, topic, epoch=2)
    wait_until(lambda: state(a, topic)["fenced"], what="a fenced")
    assert ka.produce(topic, batch([b"split-brain"]), acks=1)[0] == NOT_LEADER_OR_FOLLOWER
    assert state(c, topic)["logEnd"] == 1  # nothing of the stale leader was taken
    # An older epoch is refused outright.
    assert set_role(b, topic, "leader", 1, replicas=[]).code != 0


def test_concurrent_producers_and_role_refreshes(nodes):
    topic = _topic()
    leader, follower = _pair(nodes, topic)
    errors = []

    def producer(n: int) -> None:
        k = Kafka(leader)
        for i in range(50):
            code, _ = k.produce(topic, batch([b"p%d-%d" % (n, i)]))
            if code:
                errors.append(code)
    threads = [threading.Thread(target=producer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for _ in range(3):  # the cluster layer may set the same role again: the new task takes over
        time.sleep(0.2)
        follow(follower, leader, topic, epoch=1)
    for t in threads:
        t.join()
    assert not errors
    wait_until(lambda: state(follower, topic)["highWatermark"] == 200, what="all copied")
    assert fetched_values(Kafka(follower), topic) == fetched_values(Kafka(leader), topic)
