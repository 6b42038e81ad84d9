"""Retention, compaction and garbage collection of diskless objects (docs/diskless.md, "Janitor"), on
real gateways and a real S3 server (SeaweedFS): small WAL objects are moved into per-queue segment
objects and deleted while consumers on two gateways read the topic (one of them holding index
entries from before the move); retention.bytes deletes the oldest entries and the objects no entry
needs any more, and never the newest entry."""
from __future__ import annotations

import json
import os
import sys
import threading
import time

from kafka import KafkaConsumer, TopicPartition

from acked_records import produce_acked, read_topic
from test_diskless_kafka import create_topic, wal_and_index_keys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from clusters import wait_for  # noqa: E402

# a pass every 200 ms, objects deleted as soon as no entry refers to them: the harshest schedule
BUSY_JANITOR = ["--diskless-wal-max-ms", "10", "--diskless-janitor-interval-ms", "200", "--diskless-gc-grace-ms", "0"]
IDLE_JANITOR = ["--diskless-wal-max-ms", "10", "--diskless-janitor-interval-ms", "86400000"]


def _keys(seaweed_s3, bucket: str, part: str) -> list[str]:
    return [k for k in wal_and_index_keys(seaweed_s3, bucket) if f"/diskless/{part}/" in k]


def _slow_read(bootstrap: str, topic: str, partitions: int, out: list, errors: list) -> None:
    """A consumer that reads a few records per fetch, so it crosses many compactions."""
    try:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, max_partition_fetch_bytes=200,
                                 fetch_max_bytes=200, auto_offset_reset="earliest")
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for records in consumer.poll(200, max_records=5).values():
                out += [r.value for r in records]
        consumer.close()
    except Exception as exc:  # reported to the test thread
        errors.append(exc)


def test_compaction_moves_wal_objects_while_two_gateways_read(seaweed_s3, s3_bucket, gateway_factory):
    # the reader caches nothing: every fetch reads the objects its (soon stale) entries name
    reader = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + IDLE_JANITOR + ["--diskless-cache-bytes", "1"],
                             name="reader")
    create_topic(reader.kafka_bootstrap, "cmp", partitions=2)
    acked = []
    for n in range(8):  # many small WAL objects, each holding both partitions' batches
        acked += produce_acked(reader.kafka_bootstrap, "cmp", 40, prefix=b"c%d" % n)
    assert sorted(read_topic(reader.kafka_bootstrap, "cmp")) == sorted(acked)  # the reader holds every entry
    wal_before = _keys(seaweed_s3, s3_bucket, "wal")
    janitor = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + BUSY_JANITOR, name="janitor")
    outs, errors, threads = [[], []], [], []
    for g, out in zip((reader, janitor), outs):
        threads.append(threading.Thread(target=_slow_read, args=(g.kafka_bootstrap, "cmp", 2, out, errors)))
        threads[-1].start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(outs[0]) == sorted(outs[1]) == sorted(acked)
    # the janitor's pass may end after the readers (it takes the bucket's janitor lease first)
    wait_for(lambda: _keys(seaweed_s3, s3_bucket, "segments")
             and len(_keys(seaweed_s3, s3_bucket, "wal")) < len(wal_before), 60, "compaction and collection")
    # the reader's entries still name deleted WAL objects: it reads each entry again and finds the segment
    assert sorted(read_topic(reader.kafka_bootstrap, "cmp")) == sorted(acked)


def test_retention_bytes_deletes_the_oldest_entries_and_their_objects(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + ["--diskless-wal-max-ms", "10",
                        "--diskless-janitor-interval-ms", "300", "--diskless-gc-grace-ms", "0"])
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=g.kafka_bootstrap)
    admin.create_topics([NewTopic("ret", 1, 1, topic_configs={"diskless.enable": "true", "retention.bytes": "2000"})])
    admin.close()
    acked = []
    for n in range(10):  # ten entries of ~1 400 bytes each
        acked += produce_acked(g.kafka_bootstrap, "ret", 10, prefix=b"r%d" % n, value_bytes=100)
    consumer = KafkaConsumer(bootstrap_servers=g.kafka_bootstrap)
    tp = TopicPartition("ret", 0)

    def settled():
        """(start, records) once two passes in a row leave the start where it is (passes ran while
        the records were produced, so the start moves in steps)."""
        before = consumer.beginning_offsets([tp])[tp]
        time.sleep(0.7)
        kept = read_topic(g.kafka_bootstrap, "ret")
        return before > 0 and consumer.beginning_offsets([tp])[tp] == before and (before, kept)

    try:
        start, kept = wait_for(settled, 60, "retention to settle")
        end = consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()
    assert 0 < start < end == 100
    assert kept == acked[start:] and len(kept) >= 10  # at least retention.bytes, the newest entries
    index = _keys(seaweed_s3, s3_bucket, "index")
    client = seaweed_s3.client()
    bases = sorted(json.loads(client.get_object(Bucket=s3_bucket, Key=k)["Body"].read())["base"] for k in index)
    assert bases[0] == start  # the deleted entries' objects are gone, the kept ones unbroken
    assert len(_keys(seaweed_s3, s3_bucket, "wal")) + len(_keys(seaweed_s3, s3_bucket, "segments")) <= len(index)
