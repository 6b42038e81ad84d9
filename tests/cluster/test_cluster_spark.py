"""Spark's stock Kafka source (spark/jars) reads a replication-factor-3 topic of three gateways while
the partition leader is killed (-9) mid-stream: the query keeps running (the connector retries on
the dead connection / NOT_LEADER_OR_FOLLOWER and follows Metadata to the elected replica;
failOnDataLoss=true never fires) and its checkpointed memory sink ends with every record the
idempotent acks=all producer had acknowledged, exactly once. Long: `make cluster-long`
(CLUSTER_LONG=1). With CLUSTER_REFERENCE=1 (`make cluster-reference`) the same body runs against a
real 3-node Apache Kafka 4.x KRaft cluster with a replication-factor-2 topic (reference_sides.py)."""
from __future__ import annotations

import collections
import os
import time

import pytest

from reference_sides import kraft_cluster, reference_only, replicated_partition
from test_cluster_clients import wait_for
from test_cluster_failover import AckedProducer, elected_after, three  # noqa: F401 (the gateways param)

pytestmark = [pytest.mark.timeout(600)]
long_only = pytest.mark.skipif(not os.environ.get("CLUSTER_LONG"), reason="long: make cluster-long")

TOPIC = "spark-failover"


@pytest.fixture(params=[pytest.param("gateways", marks=long_only), pytest.param("kafka", marks=reference_only)])
def nodes(request, tmp_path):
    """(nodes by id, the topic's replication factor): three gateways (RF 3) or three KRaft nodes (RF 2)."""
    if request.param == "gateways":
        yield request.getfixturevalue("three"), 3
    else:
        with kraft_cluster(tmp_path / "kafka") as kafka:
            yield kafka, 2


@pytest.fixture
def spark():
    from spark import session

    s = session.build("rocketgate-cluster-spark")
    yield s
    s.stop()


def test_stream_keeps_reading_across_a_leader_kill_with_every_acknowledged_record_once(nodes, spark, tmp_path):
    from spark import source

    gws, replication_factor = nodes
    bootstrap = ",".join(g.kafka_bootstrap for g in gws.values())
    first = replicated_partition(gws, TOPIC, replication_factor)
    load = AckedProducer(gws, TOPIC)

    def produce(count):
        load.produce(count)
        load.flush_all_acknowledged()

    produce(300)
    df = source.read(spark, bootstrap, TOPIC, stream=True, starting="earliest",
                     options={"failOnDataLoss": "true"})
    q = (df.select("offset", "value").writeStream.format("memory").queryName("spark_failover")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="1 second").start())
    try:
        def count() -> int:
            return spark.sql("SELECT count(*) FROM spark_failover").collect()[0][0]

        wait_for(lambda: count() >= 300, 120, what="the stream to read the first records")
        gws[first.leader].kill9()
        killed_at = time.monotonic()
        produce(300)
        _, now = elected_after(gws, first.leader, TOPIC)
        produce(300)
        acked = load.acked
        wait_for(lambda: count() >= len(acked) or q.exception() is not None, 180,
                 what="the stream to read every acknowledged record")
        print(f"new leader {now.leader}; stream caught up {time.monotonic() - killed_at:.1f} s after kill -9")
        assert q.exception() is None
        time.sleep(3)  # a duplicate arriving late would show in the next micro-batch
        rows = spark.sql("SELECT offset, value FROM spark_failover").collect()
    finally:
        q.stop()
    values = [bytes(r["value"]) if isinstance(r["value"], (bytes, bytearray)) else r["value"].encode() for r in rows]
    dupes = [v for v, n in collections.Counter(values).items() if n > 1]
    assert not dupes, f"{len(dupes)} records read twice, e.g. {dupes[:3]}"
    assert sorted(values) == sorted(acked)
    assert sorted(r["offset"] for r in rows) == list(range(len(acked)))
