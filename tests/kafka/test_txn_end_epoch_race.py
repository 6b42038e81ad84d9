"""Transactions v2: an EndTxn v5 hands out the epoch its own bump made, even when a second instance of the
transactional id runs InitProducerId while the end is still being written. Before, the answer read the
epoch after the writes, so both instances got the newer epoch: the fenced one went on writing under the
other's epoch, and the idempotence check took its batches for the other's retries (acknowledged, never
stored: lost writes in a committed transaction, found by `make txn-check`). Since InitProducerId is
answered CONCURRENT_TRANSACTIONS during the end (as Kafka 4.3.1), the second instance gets its epoch
on its retry, after the end. Gateway only: the end is kept slow with the test flag
--store-write-delay-ms so the InitProducerId arrives during it."""
from __future__ import annotations

import threading
import time

import pytest
from gateway_process import GatewayProcess
from kafka_raw import RawClient

from codec.kafka import records

INIT_PRODUCER_ID, END_TXN, FIND_COORDINATOR, CREATE_TOPICS, PRODUCE = 22, 26, 10, 19, 0
CONCURRENT_TRANSACTIONS = 51


@pytest.fixture
def gateway(tmp_path):
    g = GatewayProcess(str(tmp_path / "data"), extra_args=["--store-write-delay-ms", "400"])
    try:
        yield g.start()
    finally:
        g.stop()


def _init(client: RawClient, tid: str) -> dict:
    return client.call(INIT_PRODUCER_ID, 5, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                             "producer_id": -1, "producer_epoch": -1})


def test_end_answers_its_own_epoch_not_a_later_instance(gateway):
    a, b = RawClient(gateway.kafka_bootstrap, timeout=30), RawClient(gateway.kafka_bootstrap, timeout=30)
    try:
        assert a.call(CREATE_TOPICS, 7, {"topics": [{"name": "race", "num_partitions": 1, "replication_factor": 1,
                                                     "assignments": [], "configs": []}], "timeout_ms": 30000,
                                         "validate_only": False})["topics"][0]["error_code"] == 0
        first = _init(a, "tid-race")
        batch = records.build_batch([(0, None, b"v", [])], producer_id=first["producer_id"],
                                    producer_epoch=first["producer_epoch"], base_sequence=0, transactional=True)
        produced = a.call(PRODUCE, 12, {"transactional_id": "tid-race", "acks": -1, "timeout_ms": 30000,
                                        "topic_data": [{"name": "race", "partition_data": [
                                            {"index": 0, "records": batch}]}]})
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
        ended: dict = {}

        def end() -> None:
            ended.update(a.call(END_TXN, 5, {"transactional_id": "tid-race", "producer_id": first["producer_id"],
                                             "producer_epoch": first["producer_epoch"], "committed": True}))
        ender = threading.Thread(target=end)
        ender.start()
        time.sleep(0.15)  # the commit's append is under way (each store write takes 400 ms)
        during = _init(b, "tid-race")  # as Kafka 4.3.1 while PrepareCommit: retry later (test_txn_end_in_progress.py)
        ender.join(30)
        assert during["error_code"] == CONCURRENT_TRANSACTIONS and ended["error_code"] == 0
        second = _init(b, "tid-race")  # the client's retry
        assert second["error_code"] == 0
        assert ended["producer_epoch"] == first["producer_epoch"] + 1  # the end's own bump
        assert second["producer_epoch"] != ended["producer_epoch"]  # one epoch, one instance
    finally:
        a.close()
        b.close()
