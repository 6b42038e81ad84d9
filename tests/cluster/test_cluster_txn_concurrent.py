"""Requests that meet a decided but unfinished end in a cluster (PrepareCommit, its marker waiting)
are answered at once, as Kafka 4.3.1's coordinator answers them while its markers wait:
AddPartitionsToTxn (v3, and v4's batched form), AddOffsetsToTxn, TxnOffsetCommit and InitProducerId,
under transactions v1 (EndTxn v4) and v2 (EndTxn v5, Produce v12); and the transactional clients
(librdkafka, kafka-python) retry them: a transaction loop goes on across a stopped partition leader.
Before, the gateway held each request up to 10 s waiting for the markers and then answered
COORDINATOR_NOT_AVAILABLE. Each case runs first against three Apache Kafka 4.3.1 KRaft nodes
(CLUSTER_REFERENCE=1).

How the end is made to linger: on the gateways the partition's only replica, its leader, is stopped
(SIGSTOP); on Kafka that does not work, its coordinator drops a marker whose partition has no leader
endpoint ("likely deleted already", 0.2-0.3 s after the stop here, leaving the partition's last
stable offset behind) so there the partition has two replicas and its follower is stopped: the
marker's append waits for it in the ISR. That held Kafka's PrepareCommit for a few seconds only (a
broker session of 20 s here instead of the other tests' 3 s did not make it reliably longer; not
analysed), sometimes less than the eleven requests take, so a case whose end completed before its
last request is run again, up to three times."""
from __future__ import annotations

import os
import signal
import threading
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from clusters import wait_for
from codec.kafka import records
from raw_kafka import PRODUCE
from clusters import KraftNode
from test_cluster_txn_fence import _client, _topic, _transactional_id
from test_cluster_txn_layout import END_TXN, FIND_COORDINATOR, INIT_PRODUCER_ID, SIDES, Side, _call_ok, _sides

ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, TXN_OFFSET_COMMIT = 24, 25, 28
NONE, CONCURRENT_TRANSACTIONS = 0, 51


@pytest.fixture(scope="module", params=SIDES)
def shared(request, tmp_path_factory):
    """Three nodes the cases share (each resumes the node it stops)."""
    base = tmp_path_factory.mktemp("concurrent")
    if request.param == "gateway":
        yield from _sides("gateway", base)
        return
    from bench.brokers import java_classpath
    from clusters import kraft_nodes, start_kraft
    nodes = kraft_nodes(java_classpath("kafka"), str(base / "kafka"), 3, {
        "broker.session.timeout.ms": 20000, "broker.heartbeat.interval.ms": 1000,
        "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 1,
        "offsets.topic.replication.factor": 3, "min.insync.replicas": 1})
    try:
        start_kraft(nodes)
        yield Side(nodes, lambda n: n.kafka_bootstrap, lambda n: n.kill9(), lambda: start_kraft(nodes))
    finally:
        for node in nodes.values():
            node.stop()


def _follower(side, topic: str, leader: int) -> int:
    from confluent_kafka.admin import AdminClient
    meta = AdminClient({"bootstrap.servers": side.bootstrap}).list_topics(topic, timeout=10)
    return next(r for r in meta.topics[topic].partitions[0].replicas if r != leader)


def _group(side, avoid: int) -> tuple[str, int]:
    """A consumer group whose coordinator is not node `avoid`; (it, its coordinator)."""
    probe = _client(side, next(n for n in side.nodes if n != avoid))
    try:
        while True:
            group = f"conc-{uuid.uuid4().hex[:8]}"
            found = wait_for(lambda: (c := probe.call(FIND_COORDINATOR, 4, {
                "key_type": 0, "coordinator_keys": [group]})["coordinators"][0])["error_code"] == 0 and c, 60,
                what="the group coordinator")
            if found["node_id"] != avoid:
                return group, found["node_id"]
    finally:
        probe.close()


class Held:
    """A transaction of one record on a partition whose leader is then stopped, committed: its end
    decided (the commit answered) and its marker waiting. `tv2`: EndTxn v5 and Produce v12 (the
    epoch the next requests name is the one the end handed out)."""

    def __init__(self, side, tv2: bool) -> None:
        self.side, self.tv2 = side, tv2
        kafka = isinstance(side.nodes[1], KraftNode)
        self.topic, self.leader = _topic(side, replicas=2 if kafka else 1)
        self.paused = _follower(side, self.topic, self.leader) if kafka else self.leader
        self.tid, coordinator = _transactional_id(side, avoid=self.paused)
        self.group, group_coordinator = _group(side, avoid=self.paused)
        self.coordinator, self.groups = _client(side, coordinator), _client(side, group_coordinator)
        init = _call_ok(self.coordinator, INIT_PRODUCER_ID, 5 if tv2 else 4, {
            "transactional_id": self.tid, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
            lambda out: out["error_code"])
        self.pid, self.epoch = init["producer_id"], init["producer_epoch"]
        self.stopped = None

    def commit_held(self) -> None:
        if not self.tv2:
            _call_ok(self.coordinator, ADD_PARTITIONS_TO_TXN, 3, self._txn(
                topics=[{"name": self.topic, "partitions": [0]}]),
                lambda out: out["results"][0]["results"][0]["partition_error_code"])
        data = records.build_batch([(1000, None, b"held", [])], base_timestamp=1000, producer_id=self.pid,
                                   producer_epoch=self.epoch, base_sequence=0, transactional=True)
        leader = _client(self.side, self.leader)
        try:
            _call_ok(leader, PRODUCE, 12 if self.tv2 else 9, {
                "transactional_id": self.tid, "acks": -1, "timeout_ms": 10000, "topic_data": [
                    {"name": self.topic, "partition_data": [{"index": 0, "records": data}]}]},
                lambda out: out["responses"][0]["partition_responses"][0]["error_code"])
        finally:
            leader.close()
        self.stopped = self.side.nodes[self.paused].proc.pid
        os.kill(self.stopped, signal.SIGSTOP)
        out = self.coordinator.call(END_TXN, 5 if self.tv2 else 4, self._txn(committed=True))
        assert out["error_code"] == NONE, out
        if self.tv2:
            self.pid, self.epoch = out["producer_id"], out["producer_epoch"]

    def _txn(self, **fields) -> dict:
        return {"transactional_id": self.tid, "producer_id": self.pid, "producer_epoch": self.epoch, **fields}

    def add_partitions(self, version: int) -> int:
        out = self.coordinator.call(ADD_PARTITIONS_TO_TXN, version, self._txn(
            topics=[{"name": self.topic, "partitions": [0]}]))
        return out["results"][0]["results"][0]["partition_error_code"]

    def add_partitions_batched(self, verify_only: bool) -> tuple[int, int]:
        """AddPartitionsToTxn v4 (a partition leader's form): (top-level error, the partition's)."""
        out = self.coordinator.call(ADD_PARTITIONS_TO_TXN, 4, {"transactions": [self._txn(
            verify_only=verify_only, topics=[{"name": self.topic, "partitions": [0]}])]})
        if not out["results_by_transaction"]:
            return out["error_code"], None
        return out["error_code"], out["results_by_transaction"][0]["topic_results"][0]["results"][0][
            "partition_error_code"]

    def add_offsets(self, version: int) -> int:
        return self.coordinator.call(ADD_OFFSETS_TO_TXN, version, self._txn(group_id=self.group))["error_code"]

    def txn_offset_commit(self, version: int) -> int:
        out = self.groups.call(TXN_OFFSET_COMMIT, version, self._txn(group_id=self.group, topics=[
            {"name": self.topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                 "committed_metadata": ""}]}]))
        return out["topics"][0]["partitions"][0]["error_code"]

    def init(self, version: int, expected: bool) -> tuple[int, int, int]:
        body = {"transactional_id": self.tid, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
        if expected:
            body.update(producer_id=self.pid, producer_epoch=self.epoch)
        out = self.coordinator.call(INIT_PRODUCER_ID, version, body)
        return out["error_code"], out["producer_id"], out["producer_epoch"]

    def describe(self) -> dict:
        """DescribeTransactions of the id (what a failed case saw)."""
        return self.coordinator.call(65, 0, {"transactional_ids": [self.tid]})["transaction_states"][0]

    def resume(self) -> None:
        if self.stopped is not None:
            os.kill(self.stopped, signal.SIGCONT)
            self.stopped = None

    def close(self) -> None:
        self.resume()
        self.coordinator.close()
        self.groups.close()


@pytest.mark.parametrize("tv2", [False, True], ids=["tv1", "tv2"])
def test_requests_meeting_a_decided_end_are_told_to_retry(shared, tv2):
    """Kafka 4.3.1 while PrepareCommit: CONCURRENT_TRANSACTIONS to each request, every version (the
    batched AddPartitionsToTxn v4 per partition). Before: each waited 10 s, COORDINATOR_NOT_AVAILABLE."""
    for attempt in range(3):  # (Kafka: again while its end completed before the last request, see the top)
        held = Held(shared, tv2)
        try:
            held.commit_held()
            answers = _answers(held)
            lingered = held.describe()["transaction_state"] == "PrepareCommit"
            if not lingered and attempt < 2:
                continue
            assert lingered, "the end completed before the last request, three times"
            refused = (CONCURRENT_TRANSACTIONS, -1, -1)
            assert answers == {
                "InitProducerId v3 (new)": refused, "InitProducerId v4 (expected)": refused,
                "InitProducerId v5 (expected)": refused, "AddPartitionsToTxn v3": CONCURRENT_TRANSACTIONS,
                "AddPartitionsToTxn v4": (NONE, CONCURRENT_TRANSACTIONS),
                "AddPartitionsToTxn v4 verify_only": (NONE, CONCURRENT_TRANSACTIONS),
                **dict.fromkeys(["AddOffsetsToTxn v3", "AddOffsetsToTxn v4", "TxnOffsetCommit v3",
                                 "TxnOffsetCommit v4", "TxnOffsetCommit v5"], CONCURRENT_TRANSACTIONS)}, answers
            held.resume()
            # once the marker is written the producer goes on: the same epoch re-initialised (KIP-360)
            assert wait_for(lambda: (out := held.init(4, expected=True))[0] != CONCURRENT_TRANSACTIONS and out, 90,
                            what="the end completed") == (NONE, held.pid, held.epoch + 1)
            return
        finally:
            held.close()


def _answers(held: Held) -> dict:
    """Each request once, in this order (InitProducerId first: answered NONE it would fence the rest)."""
    return {
        "InitProducerId v3 (new)": held.init(3, expected=False),
        "InitProducerId v4 (expected)": held.init(4, expected=True),
        "InitProducerId v5 (expected)": held.init(5, expected=True),
        "AddPartitionsToTxn v3": held.add_partitions(3),
        "AddPartitionsToTxn v4": held.add_partitions_batched(verify_only=False),
        "AddPartitionsToTxn v4 verify_only": held.add_partitions_batched(verify_only=True),
        "AddOffsetsToTxn v3": held.add_offsets(3),
        "AddOffsetsToTxn v4": held.add_offsets(4),
        "TxnOffsetCommit v3": held.txn_offset_commit(3),
        "TxnOffsetCommit v4": held.txn_offset_commit(4),
        "TxnOffsetCommit v5": held.txn_offset_commit(5),
    }


PAUSE_S, TRANSACTIONS, PAUSED_AT = 5.0, 6, 2


def _confluent_loop(bootstrap: str, tid: str, topic: str, group: str, before_commit) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000})
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).consumer_group_metadata()
    producer.init_transactions(60)
    for i in range(TRANSACTIONS):
        producer.begin_transaction()
        producer.produce(topic, str(i).encode(), partition=0)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, i + 1)], metadata, 60)
        producer.flush(60)
        before_commit(i)
        producer.commit_transaction(60)


def _kafka_python_loop(bootstrap: str, tid: str, topic: str, group: str, before_commit) -> None:
    from kafka import KafkaProducer
    from kafka.structs import OffsetAndMetadata, TopicPartition as KTopicPartition
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, enable_idempotence=True)
    try:
        producer.init_transactions()
        for i in range(TRANSACTIONS):
            producer.begin_transaction()
            producer.send(topic, str(i).encode(), partition=0)
            producer.send_offsets_to_transaction({KTopicPartition(topic, 0): OffsetAndMetadata(i + 1, "", -1)}, group)
            producer.flush(60)
            before_commit(i)
            producer.commit_transaction()
    finally:
        producer.close(5)


def _committed_values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = []
        wait_for(lambda: got.extend(m.value() for m in consumer.consume(10, 1) if not m.error())
                 or len(got) >= TRANSACTIONS or None, 60, what="the committed records")
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_a_transactional_loop_goes_on_across_a_paused_leader(shared, client):
    """Transactions of one record and one offset commit each; the record's partition leader (of
    three replicas) is stopped between a transaction's flush and its commit (for PAUSE_S), so the
    end lingers until a follower takes over and the next transaction's requests meet it
    (CONCURRENT_TRANSACTIONS, retried by the client): every transaction commits, each record is
    read once read_committed, and the group's offset is the last."""
    side = shared
    topic, leader = _topic(side, replicas=3)
    tid, _coordinator = _transactional_id(side, avoid=leader)
    group, _group_coordinator = _group(side, avoid=leader)
    pid = side.nodes[leader].proc.pid
    resumed = []

    def before_commit(i: int) -> None:
        if i == PAUSED_AT:
            os.kill(pid, signal.SIGSTOP)
            timer = threading.Timer(PAUSE_S, lambda: (os.kill(pid, signal.SIGCONT), resumed.append(i)))
            timer.start()
    try:
        (_confluent_loop if client == "confluent" else _kafka_python_loop)(side.bootstrap, tid, topic, group,
                                                                           before_commit)
    finally:
        wait_for(lambda: resumed or None, PAUSE_S + 10, what="the leader resumed")
    assert _committed_values(side.bootstrap, topic) == [str(i).encode() for i in range(TRANSACTIONS)]
    consumer = Consumer({"bootstrap.servers": side.bootstrap, "group.id": group})
    try:
        [committed] = consumer.committed([TopicPartition(topic, 0)], 30)
    finally:
        consumer.close()
    assert committed.offset == TRANSACTIONS
