"""Spark's stock Kafka source against the gateway: exact batch reads, streaming, restart, new partitions."""
from __future__ import annotations

import time

import pytest
from spark_helpers import add_partitions, create_topic, produce, wait_until

from spark import source

pytestmark = pytest.mark.timeout(600)


def sample_records(n: int, partitions: int) -> list[dict]:
    """Keys (none, text, binary), values, headers (none, repeated names, binary values, tags) and
    explicit partitions and timestamps (recent, so a real Kafka's retention keeps them)."""
    base = int(time.time() * 1000) - 60_000
    out = []
    for i in range(n):
        headers = []
        if i % 3:
            headers = [("TAGS", b"A" if i % 2 else b"B"), ("KEYS", f"k{i} order-{i}".encode()),
                       ("h", b"1"), ("h", bytes([0, 255, i % 256]))]
        key = None if i % 5 == 0 else (f"key-{i}".encode() if i % 2 else bytes([0xff, i % 256]))
        out.append({"key": key, "value": f"value-{i}".encode() * (1 + i % 4), "headers": headers,
                    "partition": i % partitions, "timestamp_ms": base + i * 7})
    return out


def as_rows(records) -> dict:
    return {(r["partition"], r["offset"]): (r["key"], r["value"], r["headers"], r["timestamp_ms"])
            for r in records}


def spark_rows(df) -> dict:
    out = {}
    for r in df.collect():
        headers = [(h["key"], bytes(h["value"])) for h in (r["headers"] or [])]
        key = bytes(r["key"]) if r["key"] is not None else None
        ts = int(r["timestamp"].timestamp() * 1000 + 0.5)
        out[(r["partition"], r["offset"])] = (key, bytes(r["value"]), headers, ts)
    return out


def test_batch_read_equals_what_was_produced(spark, bootstrap, topic_name):
    topic = topic_name()
    create_topic(bootstrap, topic, partitions=3)
    produced = produce(bootstrap, topic, sample_records(90, 3))
    df = source.read(spark, bootstrap, topic)  # failOnDataLoss left at its default (true)
    got = spark_rows(df)
    assert got == as_rows(produced)
    # offsets are dense per partition from 0
    for p in range(3):
        assert sorted(o for (q, o) in got if q == p) == list(range(30))
    # the decoded columns
    row = df.where("partition = 1 AND offset = 0").collect()[0]  # record 1: tag A, keys k1 order-1
    assert row["tags"] == "A"
    assert row["keys"] == ["k1", "order-1"]
    assert row["properties"]["TAGS"] == "A" and row["properties"]["KEYS"] == "k1 order-1"
    assert row["timestampType"] == 0
    unkeyed = df.where("partition = 2 AND offset = 1").collect()[0]  # record 5: no key, KEYS header
    assert unkeyed["key"] is None and unkeyed["keys"] == ["k5", "order-5"]
    plain = df.where("partition = 0 AND offset = 1").collect()[0]  # record 3: key b'key-3', no headers
    assert plain["headers"] is None and plain["tags"] is None
    assert plain["keys"] == ["key-3"] and plain["properties"] == {}


def test_batch_read_offset_and_time_ranges(spark, bootstrap, topic_name):
    topic = topic_name()
    create_topic(bootstrap, topic, partitions=1)
    produced = produce(bootstrap, topic, sample_records(40, 1))
    middle = source.read(spark, bootstrap, topic, starting={0: 10}, ending={0: 25})
    assert sorted(r["offset"] for r in middle.collect()) == list(range(10, 25))
    since = produced[30]["timestamp_ms"]
    by_time = source.read(spark, bootstrap, topic, starting_ts={0: since})
    assert sorted(r["offset"] for r in by_time.collect()) == list(range(30, 40))


def run_available_now(spark, bootstrap, topic, out_dir, checkpoint):
    df = source.read(spark, bootstrap, topic, stream=True, starting="earliest")
    q = (df.select("partition", "offset", "value").writeStream.format("parquet")
         .option("path", out_dir).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None


def test_stream_restart_from_checkpoint_no_loss_no_duplicates(spark, bootstrap, topic_name, tmp_path):
    topic = topic_name()
    create_topic(bootstrap, topic, partitions=2)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")
    first = produce(bootstrap, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(20)])
    run_available_now(spark, bootstrap, topic, out, ckpt)
    assert spark.read.parquet(out).count() == 20
    second = produce(bootstrap, topic, [{"value": f"b{i}".encode(), "partition": i % 2} for i in range(30)])
    run_available_now(spark, bootstrap, topic, out, ckpt)
    rows = [(r["partition"], r["offset"], bytes(r["value"])) for r in spark.read.parquet(out).collect()]
    assert len(rows) == 50  # no duplicates
    assert sorted(rows) == sorted((r["partition"], r["offset"], r["value"]) for r in first + second)


def test_stream_picks_up_new_messages_and_new_partitions(spark, bootstrap, topic_name, tmp_path):
    topic = topic_name()
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [{"value": b"before"}])
    df = source.read(spark, bootstrap, topic, stream=True, starting="earliest")
    name = f"live_{topic.replace('-', '_')}"
    q = (df.select("partition", "offset", "value").writeStream.format("memory").queryName(name)
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="1 second").start())
    try:
        def count(where: str = "true") -> int:
            return spark.sql(f"SELECT count(*) FROM {name} WHERE {where}").collect()[0][0]

        wait_until(lambda: count() == 1, what="the message produced before start")
        produce(bootstrap, topic, [{"value": f"after{i}".encode()} for i in range(5)])
        wait_until(lambda: count() == 6, what="messages produced after start")
        add_partitions(bootstrap, topic, 3)
        produce(bootstrap, topic, [{"value": f"p{p}".encode(), "partition": p} for p in (1, 2)])
        wait_until(lambda: count("partition > 0") == 2, what="messages of the new partitions")
        assert q.exception() is None
        rows = spark.sql(f"SELECT partition, offset FROM {name}").collect()
        assert sorted((r[0], r[1]) for r in rows) == [(0, i) for i in range(6)] + [(1, 0), (2, 0)]
    finally:
        q.stop()


def test_batch_read_over_offsets_that_hold_no_record(spark, bootstrap, topic_name):
    """A batch mixing DELAY and immediate records leaves gaps at the delayed ones' offsets on the
    gateway (docs/mapping.md, "Produce offsets are exact"): Spark's source, failOnDataLoss left
    true, reads every record once (the delayed ones later, at new offsets) and no data loss is
    reported. Against Apache Kafka the header means nothing and there are no gaps."""
    from kafka import KafkaProducer
    topic = topic_name()
    create_topic(bootstrap, topic, partitions=1)
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=1000)
    futures = [p.send(topic, value=f"v{i}".encode(), partition=0, headers=[("DELAY", b"1")] if i % 3 == 1 else [])
               for i in range(9)]
    p.flush()
    offsets = [f.get(30).offset for f in futures]
    p.close()
    df = wait_until(lambda: (d := source.read(spark, bootstrap, topic)).count() == 9 and d, 60, "the delayed records")
    rows = {r["offset"]: bytes(r["value"]).decode() for r in df.collect()}
    assert sorted(rows.values()) == sorted(f"v{i}" for i in range(9))
    assert all(rows[offset] == f"v{i}" for i, offset in enumerate(offsets) if i % 3 != 1)
