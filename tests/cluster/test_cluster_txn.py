"""Kafka transactions across a 3-gateway cluster (docs/cluster.md, "Kafka transactions"): the
transactional id's coordinator is one gateway and the topic's two partitions are led by the two
others. librdkafka's transactional producer (transactions v1) produces to both partitions, commits
offsets with sendOffsetsToTransaction, commits one transaction and aborts the next; a read_committed
consumer sees exactly the committed records and the group's offsets are the committed ones. Before
the transaction state moved to etcd the partition leaders did not know the producer
(UNKNOWN_PRODUCER_ID). Run against a 3-node KRaft Kafka 4.3.1 first (the same client calls)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from cluster.model import coordinator_of, place
from clusters import NODES, require_etcd, start_cluster, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kafka"))  # the Java check of tests/kafka
from kafka_java import KAFKA_JARS, compile_against_kafka  # noqa: E402
from kafka_raw import RawClient  # noqa: E402
from test_transactions_v2 import CHECK, EXPECTED  # noqa: E402

from codec.kafka import records  # noqa: E402

TOPIC = "txn-spread"
GROUP = "txn-spread-g"


def spread_topic(cluster, topic: str, prefix: str) -> tuple[str, str]:
    """(bootstrap, transactional id) after making `topic` with two partitions led by two gateways and
    picking an id that the third one coordinates."""
    bootstrap = ",".join(g.kafka_bootstrap for g in cluster.gateways.values())
    leaders = {a.leader for a in place(topic, 2, list(NODES), 1)}
    assert len(leaders) == 2
    tid = next(f"{prefix}-{i}" for i in range(1000) if coordinator_of(f"{prefix}-{i}", list(NODES)) not in leaders)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(10)
    return bootstrap, tid


def _read_committed(bootstrap: str, expect: int, topic: str = TOPIC) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(2)])
    got, deadline = [], time.monotonic() + 30
    while time.monotonic() < deadline and len(got) < expect:
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.value().decode())
    end = time.monotonic() + 2  # nothing more arrives (an aborted record would)
    while time.monotonic() < end:
        m = c.poll(0.3)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.close()
    return got


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    require_etcd()
    started = start_cluster(tmp_path_factory.mktemp("txn-cluster"), NODES)
    yield started
    started.stop()


def test_java_transactions_v2_across_gateways(cluster, tmp_path):
    """kafka-clients 4.3.1 (transactions v2: Produce v12 adds the partition, EndTxn v5 bumps the epoch):
    commit, abort, offsets, a zombie fenced, read_committed, with the partition led by one gateway and
    the transactional id coordinated by another; the facts Kafka 4.3.1 gives (test_transactions_v2.py)."""
    topic = "txn-v2-cluster"
    leader = place(topic, 1, list(NODES), 1)[0].leader
    tid = next(f"tid-v2-{i}" for i in range(1000) if coordinator_of(f"tid-v2-{i}", list(NODES)) != leader)
    classes = compile_against_kafka(CHECK, str(tmp_path))
    bootstrap = ",".join(g.kafka_bootstrap for g in cluster.gateways.values())
    run = subprocess.run([shutil.which("java"), "-cp", os.pathsep.join([classes, os.path.join(KAFKA_JARS, "*")]),
                          "compat.TxnCheck", bootstrap, topic, tid, "group-v2-cluster"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    facts = dict(line.split("=", 1) for line in run.stdout.splitlines() if line.split("=", 1)[0] in EXPECTED)
    assert facts == EXPECTED


def test_a_transaction_across_three_gateways(cluster):
    bootstrap, tid = spread_topic(cluster, TOPIC, "txn")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})
    producer.init_transactions(20)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(TOPIC, f"c-{i}".encode(), partition=i % 2)
    producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 7), TopicPartition(TOPIC, 1, 9)],
                                         Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
                                         .consumer_group_metadata(), 20)
    producer.commit_transaction(20)
    producer.begin_transaction()
    for i in range(6):
        producer.produce(TOPIC, f"a-{i}".encode(), partition=i % 2)
    producer.flush(20)
    producer.abort_transaction(20)
    producer.begin_transaction()
    producer.produce(TOPIC, b"c-last", partition=1)
    producer.commit_transaction(20)
    got = _read_committed(bootstrap, 11)
    assert sorted(got) == sorted([f"c-{i}" for i in range(10)] + ["c-last"])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    committed = c.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=10)
    c.close()
    assert [tp.offset for tp in committed] == [7, 9]


class RawTxn:
    """One transactional id's raw TV2 requests in a cluster, each to the gateway a client sends it to:
    InitProducerId at the coordinator, Produce v12 at the partition's leader."""

    def __init__(self, cluster, topic: str, name: str, timeout: float) -> None:
        self.topic = topic
        self.bootstrap, self.tid = spread_topic(cluster, topic, name)
        self.leaders = [a.leader for a in place(topic, 2, list(NODES), 1)]
        self.gateways = {n: RawClient(g.kafka_bootstrap, timeout=timeout) for n, g in cluster.gateways.items()}
        self.coordinator = self.gateways[coordinator_of(self.tid, list(NODES))]
        init = self.coordinator.call(22, 5, {"transactional_id": self.tid, "transaction_timeout_ms": 60000,
                                             "producer_id": -1, "producer_epoch": -1})
        self.pid, self.epoch = init["producer_id"], init["producer_epoch"]

    def produce(self, partition: int, value: bytes, epoch: int, seq: int = 0) -> int:
        batch = records.build_batch([(0, None, value, [])], producer_id=self.pid, producer_epoch=epoch,
                                    base_sequence=seq, transactional=True)
        body = {"transactional_id": self.tid, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": self.topic, "partition_data": [{"index": partition, "records": batch}]}]}
        answer = self.gateways[self.leaders[partition]].call(0, 12, body)
        return answer["responses"][0]["partition_responses"][0]["error_code"]

    def end(self, epoch: int, commit: bool = True) -> dict:
        return self.coordinator.call(26, 5, {"transactional_id": self.tid, "producer_id": self.pid,
                                             "producer_epoch": epoch, "committed": commit})

    def close(self) -> None:
        for client in self.gateways.values():
            client.close()


def test_transactions_v2_requests_across_gateways(cluster):
    """The TV2 requests themselves, each to the gateway a client sends it to: InitProducerId and EndTxn
    v5 at the coordinator, Produce v12 (adding its partition) at each partition's leader; the end's
    epoch bump fences a late write of the ended transaction at the leaders."""
    txn = RawTxn(cluster, "txn-raw", "raw", timeout=30)
    pid, epoch = txn.pid, txn.epoch
    assert [txn.produce(p, f"v2-{p}".encode(), epoch) for p in (0, 1)] == [0, 0]
    end = txn.end(epoch)
    assert (end["error_code"], end["producer_id"], end["producer_epoch"]) == (0, pid, epoch + 1)
    # EndTxn answers once the Prepare is in etcd, as Kafka: the late write is fenced once the end has
    # reached the leaders (read first); before the marker it would join the ended transaction, as on Kafka
    assert sorted(_read_committed(txn.bootstrap, 2, txn.topic)) == ["v2-0", "v2-1"]
    assert txn.produce(0, b"late", epoch, 1) in (47, 90)  # before: UNKNOWN_PRODUCER_ID (59) for every batch
    for asked in range(2):  # KIP-360 re-init with the id and epoch the end gave, then its retry: one bump
        reinit = txn.coordinator.call(22, 5, {"transactional_id": txn.tid, "transaction_timeout_ms": 60000,
                                              "producer_id": pid, "producer_epoch": epoch + 1})
        assert (reinit["error_code"], reinit["producer_id"], reinit["producer_epoch"]) == (0, pid, epoch + 2), asked
    txn.close()


def test_an_end_is_answered_once_decided_and_completed_after(cluster):
    """EndTxn is answered once etcd has the PrepareCommit, as Kafka answers once its Prepare is logged,
    while a partition's leader is stopped (its marker cannot be delivered yet); the coordinator
    completes the end once that leader is back, and the producer's next transaction goes on from it.
    Before: the answer waited for every leader's marker and the Complete (here: no answer while stopped)."""
    txn = RawTxn(cluster, "txn-early", "early", timeout=5)
    pid, epoch = txn.pid, txn.epoch

    def state() -> str:
        answer = txn.coordinator.call(65, 0, {"transactional_ids": [txn.tid]})
        return answer["transaction_states"][0]["transaction_state"]
    assert [txn.produce(p, f"first-{p}".encode(), epoch) for p in (0, 1)] == [0, 0]
    stopped = cluster.gateways[txn.leaders[1]].proc.pid
    os.kill(stopped, signal.SIGSTOP)
    try:
        end = txn.end(epoch)
        decided = state()
    finally:
        os.kill(stopped, signal.SIGCONT)
    assert (end["error_code"], end["producer_id"], end["producer_epoch"]) == (0, pid, epoch + 1)
    assert decided == "PrepareCommit"  # answered before the stopped leader had its marker
    assert txn.produce(0, b"second-0", epoch + 1) == 0  # the next transaction: waits for the end's completion
    assert state() == "Ongoing"
    assert txn.end(epoch + 1)["error_code"] == 0
    wait_for(lambda: state() == "CompleteCommit", what="the second end completed")
    assert sorted(_read_committed(txn.bootstrap, 3, txn.topic)) == ["first-0", "first-1", "second-0"]
    txn.close()
