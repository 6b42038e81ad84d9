"""Fencing a partitioned leader: three real gateways and a real etcd; gateway 1 reaches etcd through
a TCP proxy the test cuts (a network partition between it and etcd only: clients and the other
gateways still reach it). It keeps taking acks=1 produces for the partition it leads until its lease
can have expired, then refuses them (NOT_LEADER_OR_FOLLOWER; NO_PERMISSION on a RocketMQ send)
before the others elect a new leader; when the proxy is restored it registers again, follows the new
leader, and every write it acknowledged is read back once from the new leader. And an acks=all write
is never acknowledged against an in-sync set the leader shrank but could not write to etcd."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import NODES, require_etcd, start_cluster, start_etcd
from gateway_process import free_port
from raw_kafka import KafkaRaw, batch, remoting_call
from tcp_proxy import TcpProxy
from test_cluster_clients import wait_for

TOPIC = "fence"
TTL = 3
NOT_LEADER, REQUEST_TIMED_OUT, NO_PERMISSION, SEND_MESSAGE = 6, 7, 16, 10


@pytest.fixture
def partitionable(tmp_path):
    """(etcd, the proxy in front of it for gateway 1, gateways by node id)."""
    require_etcd()
    etcd = start_etcd(tmp_path)
    proxy = TcpProxy(etcd.client_port, free_port()).start()
    try:
        cluster = start_cluster(tmp_path, NODES, ["--replica-lag-time-max-ms", "5000"], TTL, etcd=etcd,
                                cluster_urls={1: f"etcd://127.0.0.1:{proxy.port}"})
    except BaseException:
        proxy.stop()
        raise
    yield etcd, proxy, cluster.gateways
    cluster.stop()
    proxy.stop()


def _partitions(gw) -> dict:
    return AdminClient({"bootstrap.servers": gw.kafka_bootstrap}).list_topics(TOPIC, timeout=10).topics[TOPIC].partitions


def _partition_led_by_gateway_1(gws) -> int:
    """Creates the topic (3 partitions, 3 replicas) and waits for every replica in sync."""
    admin = AdminClient({"bootstrap.servers": gws[2].kafka_bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=3)])[TOPIC].result(10)
    parts = wait_for(lambda: (ps := _partitions(gws[2])) and all(len(p.isrs) == 3 for p in ps.values()) and ps,
                     30, what="all replicas in sync")
    return next(p.id for p in parts.values() if p.leader == 1)


def _send_rocketmq(gw, body: bytes, queue_id: int = 0, timeout: float = 10):
    """A RocketMQ SEND_MESSAGE to the gateway's broker-local queue `queue_id` of the topic."""
    return remoting_call(gw.remoting_port, SEND_MESSAGE, {
        "producerGroup": "fence-pg", "topic": TOPIC, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
        "queueId": str(queue_id), "sysFlag": "0", "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
        "properties": "", "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, body, timeout=timeout)


class AcksOneLoad:
    """acks=1 produces of one record each to gateway `gw`'s partition, in a thread: (time, value,
    error code) of every answer."""

    def __init__(self, gw, partition: int) -> None:
        self.raw = KafkaRaw("127.0.0.1", gw.kafka_port)
        self.partition = partition
        self.answers: list[tuple[float, bytes, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "AcksOneLoad":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)
        self.raw.close()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            value = b"a1-%06d" % i
            code = self.raw.produce_error(TOPIC, self.partition, value, acks=1)
            self.answers.append((time.monotonic(), value, code))
            i += 1
            time.sleep(0.01)

    def acked(self) -> list[bytes]:
        return [v for _, v, code in self.answers if code == 0]


def test_a_leader_cut_off_from_etcd_stops_taking_writes_before_a_new_leader_is_elected(partitionable):
    _etcd, proxy, gws = partitionable
    mine = _partition_led_by_gateway_1(gws)
    ok = _send_rocketmq(gws[1], b"rmq-before")
    assert ok.code == 0, ok.remark

    with AcksOneLoad(gws[1], mine) as load:
        time.sleep(1.0)
        assert load.answers and all(code == 0 for _, _, code in load.answers)
        proxy.cut()
        cut_at = time.monotonic()
        new = wait_for(lambda: (p := _partitions(gws[2])[mine]).leader not in (-1, 1) and p, 30,
                       what="a new leader")
        elected_at = time.monotonic()
        fenced_send = _send_rocketmq(gws[1], b"rmq-fenced")
        time.sleep(0.5)
    answers = load.answers
    refused = [t for t, _, code in answers if code == NOT_LEADER]
    assert refused, "the partitioned leader never refused a write"
    first_refusal = refused[0]
    print(f"cut -> fenced {first_refusal - cut_at:.2f} s, cut -> new leader {new.leader} seen "
          f"{elected_at - cut_at:.2f} s; {len(load.acked())} acks=1 writes acknowledged")
    assert first_refusal < elected_at
    assert first_refusal - cut_at < TTL  # before the lease can have expired in etcd
    assert all(code == NOT_LEADER for t, _, code in answers if t >= first_refusal)  # fenced it stays
    assert all(code in (0, NOT_LEADER) for _, _, code in answers)
    assert fenced_send.code == NO_PERMISSION, (fenced_send.code, fenced_send.remark)
    assert "fenced" in gws[1].log()

    proxy.restore()  # gateway 1 registers again, follows the new leader and catches up
    wait_for(lambda: 1 in _partitions(gws[2])[mine].isrs, 60, what="the old leader back in sync")
    wait_for(lambda: _partitions(gws[1])[mine].leader == new.leader, 20, what="gateway 1 following the new leader")
    raw = KafkaRaw("127.0.0.1", gws[1].kafka_port)
    try:
        assert raw.produce_error(TOPIC, mine, b"late", acks=1) == NOT_LEADER  # a follower now
    finally:
        raw.close()

    acked = [b"rmq-before"] + load.acked()
    raw = KafkaRaw("127.0.0.1", gws[new.leader].kafka_port)
    try:
        got = [v for _, v in raw.fetched_values(TOPIC, mine)]
    finally:
        raw.close()
    assert sorted(got) == sorted(acked), (len(got), len(acked))  # none lost, none twice


def test_an_in_sync_set_shrunk_without_etcd_acknowledges_no_acks_all_write(partitionable):
    """The bug `make faults` found: the leader, cut from etcd while its followers are stopped,
    shrinks the in-sync set locally after the replica lag; the write to etcd fails, so etcd keeps
    the old set and elects a follower from it. The acks=all produce waiting meanwhile must not be
    acknowledged (it fails once the leader fences itself), and after healing every acknowledged
    record is on the elected leader."""
    _etcd, proxy, gws = partitionable
    mine = _partition_led_by_gateway_1(gws)
    raw = KafkaRaw("127.0.0.1", gws[1].kafka_port, timeout=30)
    leader, followers = gws[1].proc.pid, [gws[2].proc.pid, gws[3].proc.pid]
    try:
        assert raw.produce(TOPIC, batch([b"before"]), -1, mine)[0] == 0
        for pid in followers:
            os.kill(pid, signal.SIGSTOP)
        proxy.cut()
        time.sleep(1.0)  # the followers' pending long-poll fetches end unanswered: they miss what follows
        code = raw.produce(TOPIC, batch([b"cut"]), -1, mine, timeout_ms=15000)[0]
        os.kill(leader, signal.SIGSTOP)  # cut from the followers too, as in the fault: none copies "cut"
        for pid in followers:
            os.kill(pid, signal.SIGCONT)
        new = wait_for(lambda: (p := _partitions(gws[2])[mine]).leader not in (-1, 1) and p, 30,
                       what="a new leader")
    finally:
        for pid in [*followers, leader]:
            os.kill(pid, signal.SIGCONT)
        raw.close()
    proxy.restore()
    wait_for(lambda: 1 in _partitions(gws[2])[mine].isrs, 60, what="the old leader back in sync")

    raw = KafkaRaw("127.0.0.1", gws[new.leader].kafka_port)
    try:
        got = [v for _, v in raw.fetched_values(TOPIC, mine)]
    finally:
        raw.close()
    acked = [b"before"] + ([b"cut"] if code == 0 else [])
    assert set(acked) <= set(got), (acked, got)  # no acknowledged write lost
    assert code in (NOT_LEADER, REQUEST_TIMED_OUT), code  # never acknowledged against an unaccepted set


def test_a_rocketmq_send_in_async_flush_mode_waits_for_the_in_sync_replicas(partitionable):
    """The loss `make faults` found (seed 6, one-way drops from g2): in async-flush mode (the default)
    a RocketMQ send was answered SEND_OK at once, before any follower had the message, so a leader
    change lost it. SYNC_MASTER is apart from the flush mode (RocketMQ's brokerRole vs flushDiskType):
    a SEND_OK means every replica of the in-sync set etcd holds has the message. Here the followers are
    stopped, so the send may only be answered once etcd holds an in-sync set without them."""
    _etcd, _proxy, gws = partitionable
    mine = _partition_led_by_gateway_1(gws)
    local = sorted(p.id for p in _partitions(gws[2]).values() if p.leader == 1).index(mine)
    followers = [gws[2].proc.pid, gws[3].proc.pid]
    try:
        for pid in followers:
            os.kill(pid, signal.SIGSTOP)
        answer = _send_rocketmq(gws[1], b"while the followers sleep", local, timeout=30)
        in_sync_at_answer = sorted(_partitions(gws[1])[mine].isrs)
    finally:
        for pid in followers:
            os.kill(pid, signal.SIGCONT)
    assert answer.code == 0, answer.remark
    assert in_sync_at_answer == [1]  # not answered while etcd still counted the followers in sync

