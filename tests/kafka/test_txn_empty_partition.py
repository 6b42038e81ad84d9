"""A partition added to a transaction without a record of it (AddPartitionsToTxn, then the end) gets
that end's control marker, as Kafka writes WriteTxnMarkers to every partition of the transaction: the
marker takes an offset, ListOffsets latest moves past it at both isolation levels, a read_committed
Fetch serves no record (the control batch only) and names no aborted transaction. Against Apache Kafka
4.3.1 first (KAFKA_REFERENCE_BOOTSTRAP), then the gateway; before, the gateway wrote nothing there."""
from __future__ import annotations

import uuid

import pytest
from kafka_raw import RawClient
from kafka_target import eventually, target  # noqa: F401 - the module's broker fixture
from shard_aware import raw_leader
from test_transactions_v2 import _init_transactional

from codec.kafka import records

CREATE_TOPICS, ADD_PARTITIONS_TO_TXN, END_TXN, LIST_OFFSETS, FETCH, PRODUCE = 19, 24, 26, 2, 1, 0


def _topic(client, partitions: int = 2) -> str:
    name = f"emptyp-{uuid.uuid4().hex[:8]}"
    out = client.call(CREATE_TOPICS, 7, {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                                                     "assignments": [], "configs": []}], "timeout_ms": 30000,
                                         "validate_only": False})
    assert out["topics"][0]["error_code"] == 0, out
    return name


def _latest(client, topic: str, partition: int, isolation: int) -> int:
    resp = client.call(LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": isolation, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
    part = resp["topics"][0]["partitions"][0]
    assert part["error_code"] == 0, part
    return part["offset"]


def _fetch(client, topic: str, partition: int) -> dict:
    resp = client.call(FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 1,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "topics": [
            {"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": -1, "fetch_offset": 0,
                                             "last_fetched_epoch": -1, "log_start_offset": -1,
                                             "partition_max_bytes": 1 << 20}]}]})
    return resp["responses"][0]["partitions"][0]


@pytest.mark.parametrize("end_version", [4, 5])  # EndTxn v5: transactions v2 (the end bumps the epoch)
@pytest.mark.parametrize("commit", [True, False])
def test_a_partition_added_without_records_gets_the_end_marker(target, commit, end_version):  # noqa: F811
    client = target.raw()
    try:
        topic = _topic(client)
        tid = f"tid-empty-{uuid.uuid4().hex[:8]}"
        init = _init_transactional(client, tid)
        pid, epoch = init["producer_id"], init["producer_epoch"]
        added = client.call(ADD_PARTITIONS_TO_TXN, 3, {"transactional_id": tid, "producer_id": pid,
                                                       "producer_epoch": epoch,
                                                       "topics": [{"name": topic, "partitions": [0, 1]}]})
        assert [r["partition_error_code"] for r in added["results"][0]["results"]] == [0, 0], added
        batch = records.build_batch([(1000, None, b"r0", [])], base_timestamp=1000, producer_id=pid,
                                    producer_epoch=epoch, base_sequence=0, transactional=True)

        leaders = [RawClient(raw_leader(target.bootstrap, topic, p), timeout=60) for p in (0, 1)]  # records go there

        def produced() -> None:  # partition 1 gets a record (Kafka: once the new topic's leader is known)
            out = leaders[1].call(PRODUCE, 9, {"transactional_id": tid, "acks": -1, "timeout_ms": 30000, "topic_data": [
                {"name": topic, "partition_data": [{"index": 1, "records": batch}]}]})
            assert out["responses"][0]["partition_responses"][0]["error_code"] == 0, out
        eventually(produced)
        ended = client.call(END_TXN, end_version, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                         "committed": commit})
        assert ended["error_code"] == 0, ended

        def marked() -> None:  # Kafka writes its markers after answering EndTxn
            assert [_latest(leaders[p], topic, p, iso) for p in (0, 1) for iso in (0, 1)] == [1, 1, 2, 2]
        eventually(marked)
        part = _fetch(leaders[0], topic, 0)
        for leader in leaders:
            leader.close()
        assert (part["error_code"], part["high_watermark"], part["last_stable_offset"]) == (0, 1, 1)
        assert not part["aborted_transactions"]
        batches = records.parse_batches(part["records"] or b"")
        assert [(b.base_offset, bool(b.attributes & records.CONTROL)) for b in batches] == [(0, True)]
    finally:
        client.close()
