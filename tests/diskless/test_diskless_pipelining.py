"""Pipelined produces on a diskless topic (docs/diskless.md, "Write path"): a connection reads its next
request once a diskless Produce joined the WAL buffer, so the requests a client sends back to back
share one WAL object instead of waiting for one WAL close each; the answers still go out in request
order. A failed WAL PUT fails only the produces in that object (and an idempotent producer's later
batches, which must not land after a gap)."""
from __future__ import annotations

import os
import sys

import trio

from codec.kafka import protocol, records
from codec.kafka.apis import INIT_PRODUCER_ID, METADATA, PRODUCE
from objstore_fixtures import object_store_on
from semantics.diskless import DisklessWriter
from store.diskless.index import DisklessIndex
from store.objstore.api import ObjectStoreError
from test_diskless_kafka import create_topic, wal_and_index_keys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kafka"))
from kafka_raw import RawClient, produce_body, produce_error  # noqa: E402

SLOW_WAL = ["--diskless-wal-max-ms", "3000"]  # wide enough that requests sent at once share a buffer


def _batch(value: bytes) -> bytes:
    return records.build_batch([(1_700_000_000_000, None, value, [])], base_timestamp=1_700_000_000_000)


def test_pipelined_produces_share_one_wal_object_and_are_answered_in_order(seaweed_s3, s3_bucket,
                                                                              gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + SLOW_WAL)
    create_topic(g.kafka_bootstrap, "pipe", partitions=2)
    client = RawClient(g.kafka_bootstrap, timeout=60)
    try:
        frames = [protocol.request_frame(PRODUCE.key, 9, n + 1, produce_body("pipe", n % 2, _batch(b"v%d" % n)))
                  for n in range(6)]
        # the last request is a Metadata: answered at once by its handler, but sent after the produces
        frames.append(protocol.request_frame(METADATA.key, 9, 7, {"topics": None, "allow_auto_topic_creation": False,
                                                                  "include_topic_authorized_operations": False}))
        client.sock.sendall(b"".join(frames))
        answers = []
        for api in [PRODUCE] * 6 + [METADATA]:
            answers.append(protocol.decode_response(api.key, 9, client.recv_frame()))
    finally:
        client.close()
    assert [correlation for correlation, _ in answers] == list(range(1, 8))
    offsets = [(a["responses"][0]["partition_responses"][0]["error_code"],
                a["responses"][0]["partition_responses"][0]["base_offset"]) for _, a in answers[:6]]
    assert offsets == [(0, 0), (0, 0), (0, 1), (0, 1), (0, 2), (0, 2)]  # each partition's in request order
    wal = [k for k in wal_and_index_keys(seaweed_s3, s3_bucket) if "/diskless/wal/" in k]
    assert len(wal) == 1, wal  # one request at a time would make six


def test_pipelined_idempotent_batches_follow_the_ones_still_in_the_wal_buffer(seaweed_s3, s3_bucket,
                                                                            gateway_factory):
    """After sequence 0 is committed, sequences 1-3 arrive at once: 2 and 3 come while 1 is still in
    the WAL buffer and follow it (the in-flight table), instead of being refused
    OUT_OF_ORDER_SEQUENCE_NUMBER against the committed state (which ends at 0)."""
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + SLOW_WAL)
    create_topic(g.kafka_bootstrap, "idem-raw", partitions=1)
    client = RawClient(g.kafka_bootstrap, timeout=60)
    try:
        init = client.call(INIT_PRODUCER_ID.key, 4, {"transactional_id": None, "transaction_timeout_ms": -1,
                                                      "producer_id": -1, "producer_epoch": -1})
        pid, epoch = init["producer_id"], init["producer_epoch"]
        batches = [records.build_batch([(1_700_000_000_000, None, b"s%d" % n, [])], base_timestamp=1_700_000_000_000,
                                       producer_id=pid, producer_epoch=epoch, base_sequence=n) for n in range(4)]
        assert produce_error(client.call(PRODUCE.key, 9, produce_body("idem-raw", 0, batches[0]))) == (0, 0)
        client.sock.sendall(b"".join(protocol.request_frame(PRODUCE.key, 9, 10 + n, produce_body("idem-raw", 0, b))
                                     for n, b in enumerate(batches[1:])))
        answers = [protocol.decode_response(PRODUCE.key, 9, client.recv_frame()) for _ in batches[1:]]
    finally:
        client.close()
    got = [(c, a["responses"][0]["partition_responses"][0]["error_code"],
            a["responses"][0]["partition_responses"][0]["base_offset"]) for c, a in answers]
    assert got == [(10, 0, 1), (11, 0, 2), (12, 0, 3)]


class _FailingFirstWal:
    """The real store, except that the first WAL object PUT fails (an S3 error)."""

    def __init__(self, store) -> None:
        self.store, self.failed = store, False

    def put(self, key, data, **kw):
        if "diskless/wal/" in key and not self.failed:
            self.failed = True
            raise ObjectStoreError("injected: WAL PUT refused")
        return self.store.put(key, data, **kw)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_a_failed_wal_put_fails_only_the_produces_in_it(seaweed_s3, s3_bucket):
    store = object_store_on(seaweed_s3, s3_bucket, prefix="p/")
    writer = DisklessWriter(DisklessIndex(_FailingFirstWal(store)), max_ms=50)
    outcome = {}

    async def produce(name: str, slot) -> None:
        try:
            outcome[name] = await writer.result(slot)
        except ObjectStoreError:
            outcome[name] = "failed"

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            first = writer.enqueue("t", 0, _batch(b"a"), 1)
            nursery.start_soon(produce, "a", first)
            nursery.start_soon(produce, "b", writer.enqueue("t", 1, _batch(b"b"), 1))
            await first.done.wait()  # its object failed; the next produces go into a new one
            nursery.start_soon(produce, "c", writer.enqueue("t", 0, _batch(b"c"), 1))
            # an idempotent batch following `first` (its predecessor) must fail too: no sequence gap
            nursery.start_soon(produce, "d", writer.enqueue("t", 0, _batch(b"d"), 1, after=first))

    try:
        trio.run(main)
    finally:
        store.close()
    assert outcome == {"a": "failed", "b": "failed", "c": 0, "d": "failed"}
    assert writer.stats.failures == 1 and writer.stats.objects == 1


def test_an_idempotent_producer_pipelines_in_order_and_stores_each_record_once(seaweed_s3, s3_bucket,
                                                                                 gateway_factory):
    """librdkafka's idempotent producer keeps 5 requests in flight per connection: each one's batch
    follows the previous one still in a WAL buffer (the in-flight table), none is refused as out of
    order, and every partition holds the records in the order they were sent."""
    from confluent_kafka import Producer
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + ["--diskless-wal-max-ms", "100"])
    create_topic(g.kafka_bootstrap, "idem-pipe", partitions=2)
    failed, sent = [], {0: [], 1: []}
    producer = Producer({"bootstrap.servers": g.kafka_bootstrap, "enable.idempotence": True, "linger.ms": 1,
                         "batch.num.messages": 20, "message.timeout.ms": 30000})
    for n in range(600):
        value = b"i-%d" % n
        sent[n % 2].append(value)
        producer.produce("idem-pipe", value=value, partition=n % 2,
                         on_delivery=lambda err, _msg: err is not None and failed.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0 and not failed, failed
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=g.kafka_bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000)
    try:
        for partition in (0, 1):
            tp = TopicPartition("idem-pipe", partition)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            got = []
            while len(got) < len(sent[partition]):
                batch = consumer.poll(1000).get(tp, [])
                assert batch or len(got) < len(sent[partition]), got
                got += [r.value for r in batch]
                if not batch:
                    break
            assert got == sent[partition]
    finally:
        consumer.close()
