"""A read below the local start waits for the object store off the event loop: with the S3 server
frozen (SIGSTOP), a Fetch and a ListOffsets by time that need a tier segment stay unanswered, while
Metadata and Produce on another topic of the same gateway are answered; once the server runs again
both are answered with the tiered data."""
from __future__ import annotations

import select
import time

from codec.kafka import protocol, records
from tests.tier.test_tier_kafka import create, produce
from tests.tier.tier_gateway import TIERED, RawClient, list_offset, tier_gateway, wait_local_deleted

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3


def send(gw, api: int, version: int, body: dict) -> RawClient:
    """A new connection with one request sent and its answer not read yet."""
    c = RawClient(gw.kafka_bootstrap, timeout=120)
    c.correlation = 1
    c.send_raw(protocol.request_frame(api, version, 1, body))
    return c


def answer(c: RawClient, api: int, version: int) -> dict:
    correlation, resp = protocol.decode_response(api, version, c.recv_frame())
    assert correlation == 1
    return resp


def answered(c: RawClient) -> bool:
    return bool(select.select([c.sock], [], [], 0)[0])


def fetch_body(topic: str, offset: int) -> dict:
    return {"replica_id": -1, "max_wait_ms": 120_000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}


def test_tier_reads_waiting_on_a_frozen_store_hold_no_other_request(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "cold", TIERED)
    create(gw, "hot", {})
    t0 = int(time.time() * 1000)
    values = produce(gw, "cold")
    wait_local_deleted(gw)
    assert list_offset(gw, "cold", 0, -4) > 0  # offset 0 is in the tier only; nothing of it is cached
    waiting = []
    seaweed_s3.pause()
    try:
        waiting.append(fetch := send(gw, FETCH, 12, fetch_body("cold", 0)))
        waiting.append(by_time := send(gw, LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "cold", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": t0}]}]}))
        time.sleep(1.0)  # both are being served (a reader that held the loop would hold it now)
        other = RawClient(gw.kafka_bootstrap, timeout=120)
        waiting.append(other)
        md = other.call(METADATA, 12, {"topics": [{"name": "hot", "topic_id": bytes(16)}],
                                       "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        assert md["topics"][0]["error_code"] == 0
        batch = records.build_batch([(0, None, b"while the store is frozen", [])], base_timestamp=t0)
        produced = other.call(PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
            {"name": "hot", "partition_data": [{"index": 0, "records": batch}]}]})
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert not answered(fetch) and not answered(by_time)  # still waiting for the frozen store
    finally:
        seaweed_s3.resume()
    try:
        part = answer(fetch, FETCH, 12)["responses"][0]["partitions"][0]
        assert part["error_code"] == 0
        got = [r.value for b in records.parse_batches(bytes(part["records"] or b""))
               for r in records.decode_records(b.records_bytes(), b.record_count)]
        assert got and got == values[:len(got)]
        assert answer(by_time, LIST_OFFSETS, 7)["topics"][0]["partitions"][0]["offset"] == 0
    finally:
        for c in waiting:
            c.close()
