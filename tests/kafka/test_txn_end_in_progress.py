"""One gateway: a transactional producer's requests that come while its transaction's end is still
being written (a slow disk, `--store-write-delay-ms`: Apache Kafka has no such switch) are answered
as Kafka 4.3.1's coordinator answers them while its markers are written (the same answers checked
on three Kafka 4.3.1 nodes with a stopped partition leader: tests/cluster/test_cluster_txn_concurrent.py):
CONCURRENT_TRANSACTIONS to AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit (every version) and
InitProducerId. Before, AddOffsetsToTxn and TxnOffsetCommit answered NONE, beginning the next
transaction inside the end, and InitProducerId bumped the epoch under it (only AddPartitionsToTxn
was answered CONCURRENT_TRANSACTIONS)."""
import threading
import time

import pytest
from gateway_process import TEST_SHARDS
from kafka_raw import RawClient, produce_body, produce_error
from shard_aware import raw_leader

from codec.kafka import records
from codec.kafka.apis import (ADD_OFFSETS_TO_TXN, ADD_PARTITIONS_TO_TXN, END_TXN, INIT_PRODUCER_ID, METADATA,
                              PRODUCE, TXN_OFFSET_COMMIT)

DELAY_S = 3.0
TOPIC = "EndInProgressK"
CONCURRENT_TRANSACTIONS = 51


def _requests(client: RawClient, tid: str, pid: int, epoch: int) -> dict:
    txn = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch}
    offsets = {**txn, "group_id": "end-in-progress", "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]}
    return {
        "AddPartitionsToTxn v3": client.call(ADD_PARTITIONS_TO_TXN.key, 3, {
            **txn, "topics": [{"name": TOPIC, "partitions": [0]}]})["results"][0]["results"][0]["partition_error_code"],
        "AddOffsetsToTxn v3": client.call(ADD_OFFSETS_TO_TXN.key, 3, {**txn, "group_id": "end-in-progress"})["error_code"],
        **{f"TxnOffsetCommit v{v}": client.call(TXN_OFFSET_COMMIT.key, v, offsets)["topics"][0]["partitions"][0][
            "error_code"] for v in (3, 4, 5)},
        "InitProducerId v4": client.call(INIT_PRODUCER_ID.key, 4, {
            "transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": pid,
            "producer_epoch": epoch})["error_code"],
    }


@pytest.mark.skipif(TEST_SHARDS > 1, reason="under --shards the end is decided in etcd and answered before the "
                    "leader's write: the cluster case (tests/cluster/test_cluster_txn_concurrent.py) covers it")
def test_requests_during_an_end_being_written_are_told_to_retry(gateway_factory):
    g = gateway_factory(extra_args=["--store-write-delay-ms", str(int(DELAY_S * 1000))])
    producer = RawClient(g.kafka_bootstrap, timeout=30)
    tid = "end-in-progress"
    init = producer.call(INIT_PRODUCER_ID.key, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                                    "producer_id": -1, "producer_epoch": -1})
    assert init["error_code"] == 0, init
    pid, epoch = init["producer_id"], init["producer_epoch"]
    meta = producer.call(METADATA.key, 9, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True,
                                           "include_topic_authorized_operations": False})
    assert meta["topics"][0]["error_code"] == 0, meta
    at = raw_leader(g.kafka_bootstrap, TOPIC)
    added = producer.call(ADD_PARTITIONS_TO_TXN.key, 3, {"transactional_id": tid, "producer_id": pid,
                                                          "producer_epoch": epoch,
                                                          "topics": [{"name": TOPIC, "partitions": [0]}]})
    assert added["results"][0]["results"][0]["partition_error_code"] == 0, added
    batch = records.build_batch([(1000, None, b"in a transaction", [])], base_timestamp=1000, producer_id=pid,
                                producer_epoch=epoch, base_sequence=0, transactional=True)
    body = dict(produce_body(TOPIC, 0, batch, acks=-1), transactional_id=tid)
    assert produce_error(RawClient(at, timeout=30).call(PRODUCE.key, 9, body))[0] == 0

    ended = []
    ender = threading.Thread(target=lambda: ended.append(producer.call(END_TXN.key, 3, {
        "transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True})["error_code"]))
    ender.start()
    time.sleep(0.3)  # the commit's write is in progress (it lasts DELAY_S)
    answers = _requests(RawClient(g.kafka_bootstrap, timeout=30), tid, pid, epoch)
    still_ending = not ended
    ender.join(30)
    assert still_ending and ended == [0]
    assert answers == dict.fromkeys(["AddPartitionsToTxn v3", "AddOffsetsToTxn v3", "TxnOffsetCommit v3",
                                     "TxnOffsetCommit v4", "TxnOffsetCommit v5", "InitProducerId v4"],
                                    CONCURRENT_TRANSACTIONS)
    # the end done, the producer goes on: the same epoch re-initialised (KIP-360), then a new transaction
    again = producer.call(INIT_PRODUCER_ID.key, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                                     "producer_id": pid, "producer_epoch": epoch})
    assert (again["error_code"], again["producer_id"], again["producer_epoch"]) == (0, pid, epoch + 1)
