"""Transaction coordinator requests at a node that does not coordinate the transactional id:
NOT_COORDINATOR (16), as Kafka's brokers answer, and nothing changes. Run against three KRaft Kafka
4.3.1 nodes first, then three gateways on etcd.

Why (docs/faults.md, seed 74045's txn 305): a gateway held a librdkafka EndTxn(commit) in its socket
buffer through a 4.9 s stall while the client moved to the id's coordinator, retried the end there and
began its next transaction; the stalled gateway then read the stale end, found the next transaction
Ongoing and committed it with one of its three records written. Before, every gateway served every
transactional id through etcd; a Kafka broker that is not the id's coordinator refuses."""
from __future__ import annotations

import os
import signal
import socket
import sys
import time
import uuid

import pytest

from cluster.model import coordinator_of, place
from clusters import NODES, kraft_nodes, require_etcd, start_cluster, start_kraft, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kafka"))
from kafka_raw import RawClient  # noqa: E402

from bench.brokers import java_classpath  # noqa: E402
from codec.kafka import protocol, records  # noqa: E402

NOT_COORDINATOR = 16
TOPIC = "txn-not-coord"


def _clients(bootstraps: list[str]) -> dict[str, RawClient]:
    return {b: RawClient(b, timeout=30) for b in bootstraps}


def _coordinator(client: RawClient, tid: str) -> str:
    """host:port of the id's coordinator (FindCoordinator v4), retried while it is not known yet."""
    deadline = time.monotonic() + 90
    while True:
        (found,) = client.call(10, 4, {"key_type": 1, "coordinator_keys": [tid]})["coordinators"]
        if found["error_code"] == 0:
            return f"{found['host']}:{found['port']}"
        assert time.monotonic() < deadline, found
        time.sleep(0.5)


def _init(client: RawClient, tid: str) -> tuple[int, int]:
    deadline = time.monotonic() + 90
    while True:
        init = client.call(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                   "producer_id": -1, "producer_epoch": -1})
        if init["error_code"] == 0:
            return init["producer_id"], init["producer_epoch"]
        assert time.monotonic() < deadline, init
        time.sleep(0.5)


def _create_topic(client: RawClient) -> None:
    answer = client.call(19, 7, {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
                                             "assignments": [], "configs": []}], "timeout_ms": 30000,
                                 "validate_only": False})
    assert answer["topics"][0]["error_code"] in (0, 36), answer


def _add_partition(client: RawClient, tid: str, pid: int, epoch: int) -> int:
    answer = client.call(24, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                 "topics": [{"name": TOPIC, "partitions": [0]}]})
    return answer["results"][0]["results"][0]["partition_error_code"]


def _end(client: RawClient, tid: str, pid: int, epoch: int, commit: bool) -> int:
    return client.call(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                               "committed": commit})["error_code"]


def check_not_coordinator(bootstraps: list[str]) -> None:
    clients = _clients(bootstraps)
    try:
        any_client = clients[bootstraps[0]]
        _create_topic(any_client)
        tid = "not-coord-" + uuid.uuid4().hex[:8]
        coordinator = clients[_coordinator(any_client, tid)]
        other = next(c for b, c in clients.items() if c is not coordinator)
        pid, epoch = _init(coordinator, tid)
        deadline = time.monotonic() + 60
        while (code := _add_partition(coordinator, tid, pid, epoch)) != 0 and time.monotonic() < deadline:
            time.sleep(0.5)  # (Kafka: the topic's metadata reaching the coordinator)
        assert code == 0
        # the stale gateway's requests: each refused, none changes the transaction
        assert _end(other, tid, pid, epoch, commit=True) == NOT_COORDINATOR  # before: 0, the commit
        assert _end(other, tid, pid, epoch, commit=False) == NOT_COORDINATOR
        assert _add_partition(other, tid, pid, epoch) == NOT_COORDINATOR
        assert other.call(25, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                  "group_id": "g"})["error_code"] == NOT_COORDINATOR
        reinit = other.call(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                    "producer_id": -1, "producer_epoch": -1})
        assert reinit["error_code"] == NOT_COORDINATOR  # (before: it fenced the producer)
        # the transaction goes on at its coordinator: still open (an abort now), the epoch unchanged
        assert _end(coordinator, tid, pid, epoch, commit=False) == 0
    finally:
        for c in clients.values():
            c.close()


def test_kafka_answers_not_coordinator(tmp_path):
    """The reference: three KRaft Kafka nodes (transaction state topic of 50 partitions, RF 1)."""
    nodes = kraft_nodes(java_classpath("kafka"), str(tmp_path), 3, {"num.partitions": 1})
    try:
        start_kraft(nodes)
        check_not_coordinator([f"127.0.0.1:{n.kafka_port}" for n in nodes.values()])
    finally:
        for node in nodes.values():
            node.stop()


def test_gateways_answer_not_coordinator(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path, NODES)
    try:
        check_not_coordinator([g.kafka_bootstrap for g in cluster.gateways.values()])
    finally:
        cluster.stop()


def _produce_v9(client: RawClient, tid: str, pid: int, epoch: int, seq: int, value: bytes) -> int:
    batch = records.build_batch([(0, None, value, [])], producer_id=pid, producer_epoch=epoch,
                                base_sequence=seq, transactional=True)
    answer = client.call(0, 9, {"transactional_id": tid, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
    return answer["responses"][0]["partition_responses"][0]["error_code"]


def test_a_stale_end_read_after_a_pause_does_not_end_the_next_transaction(tmp_path):
    """Seed 74045's txn 305 with real gateways, transactions v1 as librdkafka: a client's EndTxn(commit)
    reaches a paused gateway (the kernel buffers it), the client gives up on that connection, ends the
    transaction at the coordinator and begins the next one (its record written); the paused gateway
    then reads the stale end. Before: it committed the next transaction (DescribeTransactions:
    CompleteCommit, the record read_committed). Now NOT_COORDINATOR, and the next transaction stays
    Ongoing. The pause (1 s) stays below the lease TTL: the gateway is refused as a non-coordinator."""
    require_etcd()
    cluster = start_cluster(tmp_path, NODES)
    clients = {}
    try:
        clients = {n: RawClient(g.kafka_bootstrap, timeout=30) for n, g in cluster.gateways.items()}
        (leader,) = [a.leader for a in place(TOPIC, 1, list(NODES), 1)]
        tid = next(f"stale-{i}" for i in range(1000) if coordinator_of(f"stale-{i}", list(NODES)) != leader)
        stale_at = next(n for n in NODES if n not in (leader, coordinator_of(tid, list(NODES))))
        coordinator = clients[coordinator_of(tid, list(NODES))]
        _create_topic(coordinator)
        pid, epoch = _init(coordinator, tid)
        wait_for(lambda: _add_partition(coordinator, tid, pid, epoch) == 0, 30, "the partition added")
        assert _produce_v9(clients[leader], tid, pid, epoch, 0, b"first") == 0
        paused = cluster.gateways[stale_at]
        host, port = paused.kafka_bootstrap.rsplit(":", 1)
        os.kill(paused.proc.pid, signal.SIGSTOP)
        try:
            stale = socket.create_connection((host, int(port)), timeout=5)  # (the kernel accepts it)
            stale.sendall(protocol.request_frame(26, 3, 1, {"transactional_id": tid, "producer_id": pid,
                                                            "producer_epoch": epoch, "committed": True}))
            stale.close()  # the client gave up on it
            assert _end(coordinator, tid, pid, epoch, commit=True) == 0  # its retry at the coordinator
            wait_for(lambda: _add_partition(coordinator, tid, pid, epoch) == 0, 30, "the next transaction")
            assert _produce_v9(clients[leader], tid, pid, epoch, 1, b"second") == 0
        finally:
            os.kill(paused.proc.pid, signal.SIGCONT)
        time.sleep(3)  # the stale end read and acted on (before: committed within this)

        def state() -> str:
            answer = coordinator.call(65, 0, {"transactional_ids": [tid]})
            return answer["transaction_states"][0]["transaction_state"]
        assert state() == "Ongoing"  # before: CompleteCommit, "second" committed alone
        assert _end(coordinator, tid, pid, epoch, commit=False) == 0
    finally:
        for c in clients.values():
            c.close()
        cluster.stop()


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
