"""A long-polling Fetch is answered by the write it waits for even when that write runs on a worker
thread (a slow disk: `--store-write-delay-ms` makes appends leave the event loop,
semantics.flow_control). The store's dispatch of such a write used to raise off the loop ("must be
called from async context"), so the fetch slept to its max wait (and only then found the record). The
order of answers is asserted: the fetch (20 s max wait) must have answered, with the record, before a
fetch of an empty topic started after the produce answers at its own, shorter, max wait (5 s): the
gateway's clock is the reference, not the test's. Apache Kafka has no slow-disk switch: gateway only."""
import threading
import time

from kafka_raw import RawClient, produce_body, produce_error
from shard_aware import raw_leader

from codec.kafka import records
from codec.kafka.apis import FETCH, PRODUCE

TOPIC = "WakeK"
EMPTY = "WakeEmptyK"
MAX_WAIT_MS = 20000
REFERENCE_WAIT_MS = 5000


def _batch(value: bytes) -> bytes:
    return records.build_batch([(1000, None, value, [])], base_timestamp=1000)


def _fetch_body(offset: int, topic: str = TOPIC, max_wait_ms: int = MAX_WAIT_MS) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}


def _values(resp: dict) -> list[bytes]:
    out = []
    for p in resp["responses"][0]["partitions"]:
        for b in records.parse_batches(bytes(p["records"] or b"")):
            out += [r.value for r in records.decode_records(b.records_bytes(), b.record_count)]
    return out


def test_long_poll_fetch_is_woken_by_a_write_on_a_worker_thread(gateway_factory):
    g = gateway_factory(extra_args=["--store-write-delay-ms", "300"])
    leader = {name: raw_leader(g.kafka_bootstrap, name) for name in (TOPIC, EMPTY)}  # auto-created, led
    producer = RawClient(leader[TOPIC], timeout=60)
    # the first write takes 300 ms: the disk is seen slow, the next appends go to a worker thread
    assert produce_error(producer.call(PRODUCE.key, 9, produce_body(TOPIC, 0, _batch(b"one"), acks=1))) == (0, 0)

    answers = []
    consumer = RawClient(leader[TOPIC], timeout=60)
    waiter = threading.Thread(target=lambda: answers.append(consumer.call(FETCH.key, 4, _fetch_body(1))))
    waiter.start()
    time.sleep(0.5)  # let the fetch find nothing at offset 1 and sleep (not asserted: a late fetch passes too)
    assert produce_error(producer.call(PRODUCE.key, 9, produce_body(TOPIC, 0, _batch(b"two"), acks=1))) == (0, 1)
    reference = RawClient(leader[EMPTY], timeout=60).call(FETCH.key, 4, _fetch_body(0, EMPTY, REFERENCE_WAIT_MS))
    assert _values(reference) == []  # answered at its max wait: 5 s after the produce
    assert answers, "the fetch was not woken by the write: still asleep"
    assert _values(answers[0]) == [b"two"]
    waiter.join(60)
