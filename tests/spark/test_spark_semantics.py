"""RocketMQ meaning seen through Spark's stock Kafka source: filtered views, delayed messages,
Kafka transactions (read_committed)."""
from __future__ import annotations

import time

import pytest
from kafka import KafkaProducer
from spark_helpers import AGAINST_KAFKA, create_topic, produce, wait_until

from spark import source
from spark.admin import Admin

pytestmark = pytest.mark.timeout(600)


def values(df) -> list[bytes]:
    return [bytes(r["value"]) for r in df.orderBy("partition", "offset").collect()]


@pytest.mark.skipif(AGAINST_KAFKA, reason="filtered views are a gateway feature")
def test_filtered_view_batch_and_stream(spark, bootstrap, topic_name, tmp_path):
    base, view = topic_name("orders"), topic_name("orders-ab")
    create_topic(bootstrap, base, partitions=2)
    tags = ["A", "B", "C"]
    produce(bootstrap, base, [{"value": f"m{i}".encode(), "headers": [("TAGS", tags[i % 3].encode())],
                               "partition": i % 2} for i in range(30)])
    with Admin(spark, bootstrap) as admin:  # the stock Java Admin's CreateTopics, with view configs
        admin.create_view(view, base, "A || B")
        assert admin.partitions(view) == 2
    df = source.read(spark, bootstrap, view)
    rows = df.collect()
    assert sorted(bytes(r["value"]) for r in rows) == sorted(f"m{i}".encode() for i in range(30) if i % 3 != 2)
    assert {r["tags"] for r in rows} == {"A", "B"}
    for p in (0, 1):  # the view's own dense offsets
        offsets = sorted(r["offset"] for r in rows if r["partition"] == p)
        assert offsets == list(range(len(offsets)))

    out = str(tmp_path / "out")
    stream = source.read(spark, bootstrap, view, stream=True, starting="earliest")
    q = (stream.select("value", "tags").writeStream.format("parquet").option("path", out)
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="1 second").start())
    try:
        wait_until(lambda: q.lastProgress is not None, what="the first micro-batch")
        produce(bootstrap, base, [{"value": f"late-{t}".encode(), "headers": [("TAGS", t.encode())]}
                                  for t in ("C", "A", "C", "B")])
        wait_until(lambda: spark.read.parquet(out).count() == 22, what="new base messages in the view")
    finally:
        q.stop()
    assert {bytes(r["value"]) for r in spark.read.parquet(out).where("value LIKE 'late%'").collect()} == {
        b"late-A", b"late-B"}


@pytest.mark.skipif(AGAINST_KAFKA, reason="delayed delivery is a gateway feature")
def test_delayed_message_appears_only_when_due(spark, bootstrap, topic_name):
    topic = topic_name("delayed")
    create_topic(bootstrap, topic, partitions=1)
    due = int(time.time() * 1000) + 20_000
    produce(bootstrap, topic, [{"value": b"now"}])
    # its own produce call, so the delayed record is a batch of its own (mixed batches are split too)
    produce(bootstrap, topic, [{"value": b"later", "headers": [("__STARTDELIVERTIME", str(due).encode())]}])
    before = values(source.read(spark, bootstrap, topic))
    if time.time() * 1000 >= due:
        pytest.skip("the first read ended after the delivery time; nothing to conclude")
    assert before == [b"now"]
    after = wait_until(lambda: (v := values(source.read(spark, bootstrap, topic))) == [b"now", b"later"] and v,
                       timeout_s=120, what="the delayed message")
    assert time.time() * 1000 >= due and after == [b"now", b"later"]


def test_transactions_visible_only_when_committed(spark, bootstrap, topic_name):
    topic = topic_name("txn")
    create_topic(bootstrap, topic, partitions=1)
    committed = {"kafka.isolation.level": "read_committed"}
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"spark-{topic}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, f"t1-{i}".encode())
        producer.flush()
        assert values(source.read(spark, bootstrap, topic, options=committed)) == []
        producer.commit_transaction()
        expected = [f"t1-{i}".encode() for i in range(3)]
        assert values(source.read(spark, bootstrap, topic, options=committed)) == expected

        producer.begin_transaction()
        producer.send(topic, b"aborted")
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"t2")
        producer.commit_transaction()
    finally:
        producer.close()
    assert values(source.read(spark, bootstrap, topic, options=committed)) == expected + [b"t2"]
