"""An acknowledged EndTxn v5 survives a kill -9 right after its answer: the epoch it handed out is the
transactional id's epoch after the restart (the producer goes on with it; the epoch before is fenced).
The coordinator journals each change of its transactional-id table (store.txn_id_journal: one appended
line, fdatasynced before the answer with sync flush, in the page cache with async flush) where it
rewrote the whole table. Gateway only (a kill -9 of the broker)."""
from __future__ import annotations

import pytest
from kafka_raw import RawClient
from shard_aware import raw_leader

from codec.kafka import records

INIT_PRODUCER_ID, END_TXN, CREATE_TOPICS, PRODUCE = 22, 26, 19, 0
NONE, INVALID_PRODUCER_EPOCH, PRODUCER_FENCED = 0, 47, 90


def _produce(client: RawClient, tid: str, pid: int, epoch: int, seq: int) -> int:
    batch = records.build_batch([(0, None, b"v%d" % seq, [])], producer_id=pid, producer_epoch=epoch,
                                base_sequence=seq, transactional=True)
    out = client.call(PRODUCE, 12, {"transactional_id": tid, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": "ends", "partition_data": [{"index": 0, "records": batch}]}]})
    return out["responses"][0]["partition_responses"][0]["error_code"]


def _end(client: RawClient, tid: str, pid: int, epoch: int) -> dict:
    return client.call(END_TXN, 5, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                    "committed": True})


@pytest.mark.parametrize("flush", ["sync", "async"])
def test_the_epoch_an_end_handed_out_survives_a_kill9(gateway_factory, flush):
    g = gateway_factory(flush=flush)
    client = RawClient(g.kafka_bootstrap, timeout=30)
    try:
        assert client.call(CREATE_TOPICS, 7, {"topics": [{"name": "ends", "num_partitions": 1, "replication_factor": 1,
                                                          "assignments": [], "configs": []}], "timeout_ms": 30000,
                                              "validate_only": False})["topics"][0]["error_code"] == 0
        init = client.call(INIT_PRODUCER_ID, 5, {"transactional_id": "tid-ends", "transaction_timeout_ms": 60000,
                                                 "producer_id": -1, "producer_epoch": -1})
        pid, epoch = init["producer_id"], init["producer_epoch"]
        leader = RawClient(raw_leader(g.kafka_bootstrap, "ends", 0), timeout=30)  # records go to the partition's leader
        for _ in range(3):  # three ends, each bumping the epoch
            assert _produce(leader, "tid-ends", pid, epoch, 0) == NONE
            ended = _end(client, "tid-ends", pid, epoch)
            assert ended["error_code"] == NONE and ended["producer_epoch"] == epoch + 1
            epoch = ended["producer_epoch"]
        leader.close()
    finally:
        client.close()
    g.kill9()
    g.start()
    client = RawClient(g.kafka_bootstrap, timeout=30)
    leader = RawClient(raw_leader(g.kafka_bootstrap, "ends", 0), timeout=30)
    try:
        assert _produce(leader, "tid-ends", pid, epoch - 1, 1) == INVALID_PRODUCER_EPOCH  # the epoch before: fenced
        assert _produce(leader, "tid-ends", pid, epoch, 0) == NONE  # the one handed out: the producer goes on
        assert _end(client, "tid-ends", pid, epoch)["producer_epoch"] == epoch + 1
    finally:
        client.close()
        leader.close()
