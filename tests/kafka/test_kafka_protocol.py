"""Protocol edge cases over a raw socket: versions, limits, malformed input, idempotence, long poll."""
from __future__ import annotations

import struct
import threading
import time
import uuid

import pytest
from gateway_process import TEST_SHARDS
from kafka_raw import RawClient, produce_body, produce_error
from shard_aware import raw_leader

from codec.kafka import protocol, records

PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, INIT_PID = 0, 1, 2, 3, 18, 22


def _topic() -> str:
    return f"raw-{uuid.uuid4().hex[:10]}"


def _batch(n: int = 3, **kw) -> bytes:
    return records.build_batch([(1000 + i, b"k%d" % i, b"v%d" % i, []) for i in range(n)], base_timestamp=1000, **kw)


def _high_watermark(c: RawClient, topic: str, partition: int = 0) -> int:
    resp = c.call(LIST_OFFSETS, 7, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
    return resp["topics"][0]["partitions"][0]["offset"]


@pytest.fixture
def client(gateway):
    c = RawClient(gateway.kafka_bootstrap)
    yield c
    c.close()


@pytest.fixture
def leader(gateway):
    """A raw client at the leader of a topic's partition 0, made by this Metadata request (the
    bootstrap with one process; under --shards either shard): records go to the partition's leader."""
    opened = []

    def at(topic: str, bootstrap: str = gateway.kafka_bootstrap) -> RawClient:
        opened.append(RawClient(raw_leader(bootstrap, topic), timeout=60))
        return opened[-1]
    yield at
    for c in opened:
        c.close()


one_broker = pytest.mark.skipif(TEST_SHARDS > 1, reason="a fetch of two partitions at one broker, which leads "
                                "both only with one process (under --shards each shard leads some)")


def test_api_versions_table_and_kip511_fallback(client):
    table = {e["api_key"]: (e["min_version"], e["max_version"]) for e in client.call(API_VERSIONS, 3, {})["api_keys"]}
    assert table[0] == (0, 13) and table[1] == (4, 18) and table[3] == (0, 13) and table[18] == (0, 4)
    assert table[68] == (0, 1) and table[69] == (0, 1)  # KIP-848 ConsumerGroupHeartbeat/Describe
    assert (table[24], table[25], table[26], table[28]) == ((0, 5), (0, 4), (0, 5), (0, 5))  # transactions (v2)
    client.send_raw(protocol.request_frame(API_VERSIONS, 0, 99, {})[:6] + b"\x00\x63" + protocol.request_frame(
        API_VERSIONS, 0, 99, {})[8:])  # ApiVersions v99
    correlation, body = protocol.decode_response(API_VERSIONS, 0, client.recv_frame())
    assert correlation == 99 and body["error_code"] == 35 and any(e["api_key"] == 18 for e in body["api_keys"])


def test_old_produce_versions_rejected_cleanly(leader):
    topic = _topic()
    client = leader(topic)
    resp = client.call(PRODUCE, 2, produce_body(topic, 0, b"\x00" * 30))
    assert produce_error(resp)[0] == 35
    assert client.call(METADATA, 1, {"topics": [{"name": topic}]})["topics"][0]["error_code"] == 0


def test_bad_crc_is_corrupt_message_and_nothing_is_stored(leader):
    topic = _topic()
    client = leader(topic)
    good = _batch()
    bad = bytearray(good)
    bad[-1] ^= 0x55
    assert produce_error(client.call(PRODUCE, 9, produce_body(topic, 0, bytes(bad))))[0] == 2
    assert _high_watermark(client, topic) == 0
    assert produce_error(client.call(PRODUCE, 9, produce_body(topic, 0, good))) == (0, 0)
    assert _high_watermark(client, topic) == 3


def test_batch_over_max_message_bytes_is_message_too_large(gateway_factory):
    g = gateway_factory(extra_args=["--max-message-bytes", "10000"])
    topic = _topic()
    c = RawClient(raw_leader(g.kafka_bootstrap, topic))
    big = records.build_batch([(0, None, b"x" * 20000, [])])
    assert produce_error(c.call(PRODUCE, 7, produce_body(topic, 0, big)))[0] == 10
    assert _high_watermark(c, topic) == 0
    c.close()


def test_oversized_frame_closes_only_that_connection(gateway_factory):
    g = gateway_factory(extra_args=["--max-frame-bytes", "1m"])
    bystander = RawClient(g.kafka_bootstrap)
    bystander.call(API_VERSIONS, 0, {})
    c = RawClient(g.kafka_bootstrap)
    c.send_raw(struct.pack(">i", 50 * 1024 * 1024) + b"\x00" * 100)  # announces 50 MiB, refused before reading
    assert c.is_closed()
    c.close()
    assert bystander.call(API_VERSIONS, 0, {})["error_code"] == 0
    bystander.close()


@pytest.mark.parametrize("garbage", [
    struct.pack(">i", 4) + b"\x00\x03\x00",  # shorter than any header
    protocol.request_frame(3, 9, 1, {"topics": [{"name": "x"}]})[:-3],  # truncated body (sizes patched below)
    struct.pack(">i", 14) + struct.pack(">hhih", 0, 9, 1, -1) + b"\xff\xff\xff\xff",  # produce with junk
])
def test_malformed_requests_close_the_connection_not_the_server(gateway, garbage):
    if garbage[4:6] == b"\x00\x03":  # fix the size prefix of the truncated frame
        garbage = struct.pack(">i", len(garbage) - 4) + garbage[4:]
    c = RawClient(gateway.kafka_bootstrap)
    c.send_raw(garbage)
    assert c.is_closed()
    c.close()
    other = RawClient(gateway.kafka_bootstrap)
    assert other.call(API_VERSIONS, 3, {})["error_code"] == 0
    other.close()


def test_idempotent_dedup_and_out_of_order(leader):
    topic = _topic()
    client = leader(topic)
    pid = client.call(INIT_PID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert pid["error_code"] == 0 and pid["producer_id"] >= 0
    pid, epoch = pid["producer_id"], pid["producer_epoch"]
    b0 = _batch(3, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    b1 = _batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=3)
    assert produce_error(client.call(PRODUCE, 9, produce_body(topic, 0, b0))) == (0, 0)
    assert produce_error(client.call(PRODUCE, 9, produce_body(topic, 0, b1))) == (0, 3)
    assert produce_error(client.call(PRODUCE, 9, produce_body(topic, 0, b0))) == (0, 0)  # retry: same offset
    assert _high_watermark(client, topic) == 5  # stored once
    gap = _batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=9)
    assert produce_error(client.call(PRODUCE, 9, produce_body(topic, 0, gap)))[0] == 45
    assert _high_watermark(client, topic) == 5
    other = client.call(INIT_PID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert other["producer_id"] != pid


def test_producer_ids_not_reused_after_restart(gateway):
    c = RawClient(gateway.kafka_bootstrap)
    first = c.call(INIT_PID, 0, {"transactional_id": None, "transaction_timeout_ms": 1000})["producer_id"]
    c.close()
    gateway.restart()
    c = RawClient(gateway.kafka_bootstrap)
    second = c.call(INIT_PID, 0, {"transactional_id": None, "transaction_timeout_ms": 1000})["producer_id"]
    c.close()
    assert second > first


def _fetch_body(topic: str, offset: int, max_wait_ms: int, min_bytes: int = 1) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                 "partition_max_bytes": 1 << 20}]}]}


def test_fetch_long_poll_is_woken_by_a_produce(gateway):
    topic = _topic()
    at = raw_leader(gateway.kafka_bootstrap, topic)  # the partition's leader
    c = RawClient(at, timeout=60)
    assert produce_error(c.call(PRODUCE, 9, produce_body(topic, 0, _batch(2)))) == (0, 0)

    def later():
        p = RawClient(at)
        time.sleep(0.5)
        p.call(PRODUCE, 9, produce_body(topic, 0, _batch(4)))
        p.close()

    t = threading.Thread(target=later)
    t.start()
    resp = c.call(FETCH, 12, _fetch_body(topic, 2, max_wait_ms=30000))
    t.join()
    part = resp["responses"][0]["partitions"][0]
    assert part["error_code"] == 0 and part["high_watermark"] == 6
    (batch,) = records.parse_batches(part["records"])
    assert batch.base_offset == 2 and batch.record_count == 4 and batch.crc_ok()
    c.close()


@one_broker
def test_fetch_inside_batch_and_every_partition_answered(client):
    topic = _topic()
    assert produce_error(client.call(PRODUCE, 9, produce_body(topic, 0, _batch(5)))) == (0, 0)
    body = _fetch_body(topic, 3, max_wait_ms=0)
    body["topics"][0]["partitions"].append({"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1000})
    body["topics"][0]["partitions"].append({"partition": 0, "fetch_offset": 99, "partition_max_bytes": 1000})
    parts = client.call(FETCH, 11, body)["responses"][0]["partitions"]
    assert [p["partition_index"] for p in parts] == [0, 1, 0]
    (batch,) = records.parse_batches(parts[0]["records"])
    assert batch.base_offset == 0 and batch.record_count == 5  # the client skips offsets 0..2
    assert parts[1]["error_code"] == 0 and parts[1]["records"] == b"" and parts[1]["high_watermark"] == 0
    assert parts[2]["error_code"] == 1  # OFFSET_OUT_OF_RANGE


@one_broker
def test_fetch_across_interleaved_partitions_lookups_and_byte_limit(client):
    """Batches of two partitions alternate in the CommitLog (several contiguous runs), a batch spans
    the gateway's ConsumeQueue lookup window, and partition_max_bytes cuts between batches."""
    topic = _topic()
    sizes = []
    for _ in range(3):
        for partition in (0, 1):
            batch = _batch(3000)
            sizes.append(len(batch))
            assert produce_error(client.call(PRODUCE, 9, produce_body(topic, partition, batch)))[0] == 0
    body = _fetch_body(topic, 0, max_wait_ms=0)
    body["max_bytes"] = 1 << 22
    body["topics"][0]["partitions"] = [
        {"partition": 0, "fetch_offset": 4500, "partition_max_bytes": 1 << 22},
        {"partition": 1, "fetch_offset": 0, "partition_max_bytes": sizes[0] * 2 + 10}]
    parts = client.call(FETCH, 11, body)["responses"][0]["partitions"]
    whole = records.parse_batches(parts[0]["records"])
    assert [(b.base_offset, b.record_count, b.crc_ok()) for b in whole] == [(3000, 3000, True), (6000, 3000, True)]
    cut = records.parse_batches(parts[1]["records"])
    assert [(b.base_offset, b.record_count) for b in cut] == [(0, 3000), (3000, 3000)]


def test_list_offsets_earliest_latest_and_time_miss(leader):
    topic = _topic()
    client = leader(topic)
    client.call(PRODUCE, 9, produce_body(topic, 0, _batch(4)))
    resp = client.call(LIST_OFFSETS, 5, {"replica_id": -1, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "timestamp": -2}, {"partition_index": 0, "timestamp": -1},
        {"partition_index": 0, "timestamp": 1002}, {"partition_index": 0, "timestamp": 10 ** 13}]}]})
    got = [(p["offset"], p["timestamp"]) for p in resp["topics"][0]["partitions"]]
    assert got == [(0, -1), (4, -1), (2, 1002), (-1, -1)]


def test_log_append_time_topic(client):
    topic = _topic()
    created = client.call(19, 7, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                                              "configs": [{"name": "message.timestamp.type",
                                                           "value": "LogAppendTime"}]}], "timeout_ms": 5000})
    assert created["topics"][0]["error_code"] == 0
    resp = client.call(PRODUCE, 9, produce_body(topic, 0, _batch(2)))
    part = resp["responses"][0]["partition_responses"][0]
    assert part["error_code"] == 0 and part["log_append_time_ms"] > 1000
    fetched = client.call(FETCH, 12, _fetch_body(topic, 0, max_wait_ms=0))["responses"][0]["partitions"][0]
    (batch,) = records.parse_batches(fetched["records"])
    assert batch.crc_ok() and batch.attributes & records.TIMESTAMP_LOG_APPEND
    assert batch.max_timestamp == part["log_append_time_ms"]


def test_create_topics_errors(client):
    body = {"topics": [
        {"name": "bad name!", "num_partitions": 1, "replication_factor": 1},
        {"name": _topic(), "num_partitions": 0, "replication_factor": 1},
        {"name": _topic(), "num_partitions": 10 ** 9, "replication_factor": 1},
        {"name": _topic(), "num_partitions": 1, "replication_factor": 3},
        {"name": _topic(), "num_partitions": 1, "replication_factor": 1,
         "configs": [{"name": "cleanup.policy", "value": "shred"}]},
    ], "timeout_ms": 1000}
    codes = [t["error_code"] for t in client.call(19, 5, body)["topics"]]
    assert codes == [17, 37, 37, 38, 40]


def test_unadvertised_version_gets_unsupported_version(client):
    """Heartbeat v4 is the newest we serve: v5 is answered (in the v4 layout) with error 35."""
    frame = bytearray(protocol.request_frame(12, 4, 77, {"group_id": "g", "generation_id": 1, "member_id": "m"}))
    frame[6:8] = b"\x00\x05"
    client.send_raw(bytes(frame))
    correlation, body = protocol.decode_response(12, 4, client.recv_frame())
    assert correlation == 77 and body["error_code"] == 35
