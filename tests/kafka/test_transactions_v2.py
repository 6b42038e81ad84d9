"""Transactions v2 (KIP-890 part 2) through the stock Java producer (kafka-clients 4.3.1, which uses TV2
when the broker finalizes transaction.version=2), against Apache Kafka 4.3.1 first, then the gateway:
commit, abort, offsets committed in a transaction, the epoch bumped at every end, a zombie producer
fenced, and a read_committed consumer that sees exactly the committed records. Also the TV1 rule kept
for older clients: a transactional produce to a partition not added to the transaction is refused.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid

import pytest
from gateway_process import GatewayProcess
from kafka_java import KAFKA_JARS, compile_against_kafka
from kafka_raw import RawClient
from shard_aware import raw_leader

from bench.brokers import KafkaBroker
from codec.kafka import records
from compat.jvm import JAVA_DIR

pytestmark = pytest.mark.timeout(400)

CHECK = os.path.join(JAVA_DIR, "src", "kafkatxn", "compat", "TxnCheck.java")
EXPECTED = {
    "epoch_after_three": "3",  # init 0, then one bump per end (TV2); TV1 would stay 0
    "zombie": "refused",
    "committed_offset": "42",  # the aborted transaction's 99 is not applied
    "read_committed": "c1,c2,c3,c4,c5",
}


@pytest.fixture(scope="module")
def check_classes(tmp_path_factory):
    return compile_against_kafka(CHECK, str(tmp_path_factory.mktemp("txn-check")))


@pytest.fixture(scope="module", params=["kafka", "gateway"])
def bootstrap(request, tmp_path_factory):
    if request.param == "kafka":
        broker = KafkaBroker(str(tmp_path_factory.mktemp("kafka")))
        try:
            broker.start()
            yield broker.bootstrap
        finally:
            broker.stop()
        return
    gateway = GatewayProcess(str(tmp_path_factory.mktemp("gateway") / "data"))
    try:
        gateway.start()
        yield gateway.kafka_bootstrap
    finally:
        gateway.stop()


def facts(classes: str, bootstrap: str, *diskless: str) -> dict:
    """What TxnCheck saw (`diskless`: "true" makes its topic a diskless one)."""
    run = subprocess.run([shutil.which("java"), "-cp", os.pathsep.join([classes, os.path.join(KAFKA_JARS, "*")]),
                          "compat.TxnCheck", bootstrap, "txn-v2", "tid-v2", "group-v2", *diskless],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(line.split("=", 1) for line in run.stdout.splitlines() if line.split("=", 1)[0] in EXPECTED)


def test_java_transactions_v2(check_classes, bootstrap):
    assert facts(check_classes, bootstrap) == EXPECTED


def _init_transactional(client: RawClient, tid: str) -> dict:
    """InitProducerId, retried while Kafka creates its transaction state topic."""
    deadline = time.monotonic() + 60
    while True:
        client.call(10, 4, {"key_type": 1, "coordinator_keys": [tid]})
        init = client.call(22, 5, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                   "producer_id": -1, "producer_epoch": -1})
        if init["error_code"] == 0 or time.monotonic() > deadline:
            assert init["error_code"] == 0, init
            return init
        time.sleep(0.5)


@pytest.mark.parametrize("version,expected", [(9, 48), (11, 120)])
def test_produce_to_partition_not_added_refused_in_tv1(bootstrap, version, expected):
    """A transactional batch before AddPartitionsToTxn (TV1, Produce below v12): refused (KIP-890 part 1
    verification) with INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from Produce v11 on."""
    client = RawClient(bootstrap, timeout=30)
    try:
        topic, tid = "txn-v1-" + uuid.uuid4().hex[:6], "tid-v1-" + uuid.uuid4().hex[:6]
        assert client.call(19, 7, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                                               "assignments": [], "configs": []}], "timeout_ms": 30000,
                                   "validate_only": False})["topics"][0]["error_code"] == 0
        init = _init_transactional(client, tid)
        batch = records.build_batch([(0, None, b"v", [])], producer_id=init["producer_id"],
                                    producer_epoch=init["producer_epoch"], base_sequence=0, transactional=True)
        body = {"transactional_id": tid, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
        leader = RawClient(raw_leader(bootstrap, topic, 0), timeout=30)  # records go to the partition's leader
        try:
            deadline = time.monotonic() + 30
            code = leader.call(0, version, body)["responses"][0]["partition_responses"][0]["error_code"]
            while code == 6 and time.monotonic() < deadline:  # NOT_LEADER_OR_FOLLOWER: Kafka still electing
                time.sleep(0.5)
                code = leader.call(0, version, body)["responses"][0]["partition_responses"][0]["error_code"]
        finally:
            leader.close()
        assert code == expected
    finally:
        client.close()


def _create(client: RawClient, topic: str, partitions: int = 1) -> None:
    answer = client.call(19, 7, {"topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                                             "assignments": [], "configs": []}], "timeout_ms": 30000,
                                 "validate_only": False})
    assert answer["topics"][0]["error_code"] == 0


def _produce_code(client: RawClient, version: int, tid: str, topic: str, batch: bytes) -> int:
    """The partition's error code, retried while Kafka elects the new partition's leader."""
    body = {"transactional_id": tid, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
    deadline = time.monotonic() + 30
    while True:
        code = client.call(0, version, body)["responses"][0]["partition_responses"][0]["error_code"]
        if code != 6 or time.monotonic() > deadline:  # NOT_LEADER_OR_FOLLOWER
            return code
        time.sleep(0.5)


def _end_txn(client: RawClient, end: dict) -> dict:
    """EndTxn v5, retried while CONCURRENT_TRANSACTIONS (Kafka: the previous state is still being written)."""
    deadline = time.monotonic() + 30
    while True:
        answer = client.call(26, 5, end)
        if answer["error_code"] != 51 or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_end_txn_v5_bumps_the_epoch(bootstrap):
    """Produce v12 adds the partition implicitly; EndTxn v5 answers the bumped epoch; its retry with the
    old epoch gets the same answer; a write with the old epoch afterwards is fenced."""
    client = RawClient(bootstrap, timeout=30)
    leader = None
    try:
        topic, tid = "txn-v2-" + uuid.uuid4().hex[:6], "tid-v2-" + uuid.uuid4().hex[:6]
        _create(client, topic)
        init = _init_transactional(client, tid)
        leader = RawClient(raw_leader(bootstrap, topic, 0), timeout=30)  # records go to the partition's leader
        pid, epoch = init["producer_id"], init["producer_epoch"]

        def batch(e, seq):
            return records.build_batch([(0, None, b"v", [])], producer_id=pid, producer_epoch=e,
                                       base_sequence=seq, transactional=True)
        assert _produce_code(leader, 12, tid, topic, batch(epoch, 0)) == 0
        end = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True}
        first = _end_txn(client, end)
        assert (first["error_code"], first["producer_id"], first["producer_epoch"]) == (0, pid, epoch + 1)
        again = _end_txn(client, end)
        assert (again["error_code"], again["producer_id"], again["producer_epoch"]) == (0, pid, epoch + 1)
        assert _produce_code(leader, 12, tid, topic, batch(epoch, 1)) in (47, 90)  # INVALID_PRODUCER_EPOCH / FENCED
        assert _produce_code(leader, 12, tid, topic, batch(epoch + 1, 0)) == 0
    finally:
        client.close()
        if leader is not None:
            leader.close()


def test_add_partitions_v4_verify_only(bootstrap):
    """The batched AddPartitionsToTxn (v4, as brokers send it): add, then verify what is in."""
    client = RawClient(bootstrap, timeout=30)
    try:
        topic, tid = "txn-v4-" + uuid.uuid4().hex[:6], "tid-v4-" + uuid.uuid4().hex[:6]
        _create(client, topic, 2)
        init = _init_transactional(client, tid)

        def add(partitions, verify):
            answer = client.call(24, 4, {"transactions": [{
                "transactional_id": tid, "producer_id": init["producer_id"], "producer_epoch": init["producer_epoch"],
                "verify_only": verify, "topics": [{"name": topic, "partitions": partitions}]}]})
            assert answer["error_code"] == 0
            (result,) = answer["results_by_transaction"]
            return {r["partition_index"]: r["partition_error_code"] for r in result["topic_results"][0]["results"]}
        assert add([0], False) == {0: 0}
        assert add([0, 1], True) == {0: 0, 1: 120}  # TRANSACTION_ABORTABLE: 1 is not in the transaction
    finally:
        client.close()
