"""The delay rule on the Kafka port (docs/mapping.md "Delay rule"): a record whose DELAY header is
not an integer (empty too) or whose __STARTDELIVERTIME is not one or lies more than
--timer-max-delay-sec ahead refuses its partition's records INVALID_RECORD with KIP-467
`record_errors`, the shape Kafka answers for its own invalid records (keyless records on a compacted
topic, tests/kafka/test_kafka_keyless_and_share_admin.py), and nothing of the batch is stored.
Kafka has no delayed delivery, so these run against the gateway only; librdkafka and kafka-python
see the error as Kafka's."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaProducer
from kafka.errors import InvalidRecordError
from kafka_raw import RawClient

from codec.kafka import records
from codec.remoting import RequestCode as RC
from gateway_process import TEST_SHARDS
from remoting.wire import Peer
from shard_aware import broker_address, partition_leaders, raw_leader, rocketmq_queue

PRODUCE, INVALID_RECORD = 0, 87
DAY_MS = 86_400_000


def _ms() -> int:
    return int(time.time() * 1000)


def _produce_raw(gw, topic: str, rows: list, compression: int = records.NONE) -> dict:
    now = _ms()
    batch = records.build_batch([(now, None, value, headers) for value, headers in rows], base_timestamp=now,
                                compression=compression)
    c = RawClient(raw_leader(gw.kafka_bootstrap, topic), timeout=30)  # the first call creates the topic
    try:
        body = {"acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
        return c.call(PRODUCE, 9, body)["responses"][0]["partition_responses"][0]
    finally:
        c.close()


def _stored(gw, topic: str) -> dict:
    """Entries in the topic's queue 0 and in each schedule queue (nothing stored means all zero), at
    the broker storing partition 0 (one process, or the shard leading it: schedule queues are its own)."""
    broker, queue = rocketmq_queue(partition_leaders(gw.kafka_bootstrap, topic), 0)
    p = Peer(gw.namesrv if TEST_SHARDS == 1 else broker_address(gw.namesrv, topic, broker))
    try:
        def top(t, q):
            resp = p.call(RC.GET_MAX_OFFSET, {"topic": t, "queueId": q})
            return int(resp.ext_fields["offset"]) if resp.code == 0 else 0
        return {"topic": top(topic, queue), "scheduled": sum(top("SCHEDULE_TOPIC_XXXX", q) for q in range(19))}
    finally:
        p.close()


BAD = [
    ([("DELAY", b"abc")], 'For input string: "abc"'),
    ([("DELAY", b"")], 'For input string: ""'),
    ([("DELAY", None)], 'For input string: ""'),
    ([("DELAY", b"2147483648")], "not a delay level"),
    ([("__STARTDELIVERTIME", b"soon")], "timer message illegal"),
    ([("__STARTDELIVERTIME", b"")], "timer message illegal"),
    ([("__STARTDELIVERTIME", str(_ms() + 10 * DAY_MS).encode())], "max delay 259200000ms"),
]


@pytest.mark.parametrize("headers, why", BAD, ids=[f"{h[0][0]}={h[0][1]!r}" for h, _w in BAD])
def test_bad_delay_headers_refuse_the_batch_with_record_errors(gateway, headers, why):
    topic = f"dr-{uuid.uuid4().hex[:8]}"
    assert _produce_raw(gateway, topic, [(b"ok", [])])["error_code"] == 0  # creates the topic
    before = _stored(gateway, topic)
    resp = _produce_raw(gateway, topic, [(b"a", []), (b"bad", headers), (b"c", [("DELAY", b"1")]),
                                          (b"bad-too", headers)])
    assert resp["error_code"] == INVALID_RECORD and resp["base_offset"] == -1
    assert [e["batch_index"] for e in resp["record_errors"]] == [1, 3]
    assert all(why in e["batch_index_error_message"] for e in resp["record_errors"])
    assert resp["error_message"].startswith("One or more records have been rejected due to 2 record errors in "
                                            "total, and only showing the first three errors at most: "
                                            "[RecordError(batchIndex=1, message='")
    assert _stored(gateway, topic) == before  # nothing of the batch: neither the good nor the delayed records


@pytest.mark.parametrize("compression", [records.GZIP, records.LZ4, records.ZSTD])
def test_a_compressed_batch_is_checked_too(gateway, compression):
    topic = f"dr-{uuid.uuid4().hex[:8]}"
    assert _produce_raw(gateway, topic, [(b"ok", [])], compression)["error_code"] == 0
    resp = _produce_raw(gateway, topic, [(b"a", []), (b"bad", [("DELAY", b"x")])], compression)
    assert resp["error_code"] == INVALID_RECORD and [e["batch_index"] for e in resp["record_errors"]] == [1]
    assert _stored(gateway, topic) == {"topic": 1, "scheduled": 0}


def test_the_rule_lets_through_what_rocketmq_stores(gateway):
    """DELAY <= 0 and a deliver time in the past are stored at once, a level above the last is
    clamped to it, a deliver time up to the maximum ahead waits (as RocketMQ 5.5)."""
    topic = f"dr-{uuid.uuid4().hex[:8]}"
    now = _ms()
    resp = _produce_raw(gateway, topic, [(b"z", [("DELAY", b"0")]), (b"n", [("DELAY", b"-1")]),
                                         (b"past", [("__STARTDELIVERTIME", str(now - 1000).encode())])])
    assert resp["error_code"] == 0, resp
    assert _produce_raw(gateway, topic, [(b"max", [("DELAY", b"99")])])["error_code"] == 0
    ahead = _produce_raw(gateway, topic, [(b"ahead", [("__STARTDELIVERTIME", str(now + 3 * DAY_MS - 60_000)
                                                       .encode())])])
    assert ahead["error_code"] == 0, ahead
    # 3 stored at once; the 2 delayed records' produce offsets stay gaps until they are due (docs/mapping.md,
    # "Produce offsets are exact")
    assert _stored(gateway, topic) == {"topic": 5, "scheduled": 2}


def test_librdkafka_reports_the_refused_records(gateway):
    topic = f"dr-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": gateway.kafka_bootstrap, "linger.ms": 500, "retries": 0})
    reports = {}

    def done(err, msg):
        reports[msg.value()] = err
    p.produce(topic, b"warm-up", partition=0, on_delivery=done)
    assert p.flush(30) == 0 and reports.pop(b"warm-up") is None
    for value, headers in [(b"good", None), (b"bad", [("DELAY", b"abc")]), (b"late", [("DELAY", b"1")])]:
        p.produce(topic, value, partition=0, headers=headers, on_delivery=done)
    assert p.flush(30) == 0
    assert reports[b"bad"].code() == KafkaError.INVALID_RECORD
    # the batch's other records fail with it (as for Kafka's own record errors)
    assert {reports[b"good"].code(), reports[b"late"].code()} <= {KafkaError.INVALID_RECORD,
                                                                  KafkaError._INVALID_DIFFERENT_RECORD}
    assert _stored(gateway, topic) == {"topic": 1, "scheduled": 0}


def test_kafka_python_fails_the_send(gateway):
    topic = f"dr-{uuid.uuid4().hex[:8]}"
    p = KafkaProducer(bootstrap_servers=gateway.kafka_bootstrap, retries=0)
    try:
        p.send(topic, b"warm-up", partition=0).get(30)
        future = p.send(topic, b"far", partition=0, headers=[("__STARTDELIVERTIME", str(_ms() + 10 * DAY_MS).encode())])
        with pytest.raises(InvalidRecordError):
            future.get(30)
    finally:
        p.close()
    assert _stored(gateway, topic) == {"topic": 1, "scheduled": 0}
