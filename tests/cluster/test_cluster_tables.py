"""Table topics in a cluster (docs/tables.md, "Clusters"): three real gateways on a real etcd, each
with its own tier prefix and one shared --tables-url on the real SeaweedFS server. Each queue is
converted by its leader only, all commit to one shared catalog in the bucket (conditional writes),
and every gateway's /iceberg serves the same table. After a kill -9 of a queue's leader its new
leader resumes the queue from the table's rocketgate.next-offsets: the table then holds exactly the
log's records, none missing, none twice."""
from __future__ import annotations

import json
import os
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import NODES, require_etcd, start_cluster, wait_for
from gateway_process import GatewayProcess, free_port, wait_port

TOPIC = "tclicks"
PARTITIONS = 2


def tables_gateway(server, bucket: str):
    """A GatewayProcess class for start_cluster: its own HTTP port and tier prefix, the shared tables URL."""
    class TablesGateway(GatewayProcess):
        def __init__(self, data_dir: str, extra_args=()) -> None:
            self.http_port = free_port()
            node = os.path.basename(data_dir)
            super().__init__(data_dir, extra_args=[
                *extra_args, "--http-port", str(self.http_port), *server.tier_args(bucket, prefix=f"{node}/"),
                "--tables-url", f"s3://{bucket}/shared-tables/", "--tables-vend-credentials"])

        def start(self) -> "TablesGateway":
            super().start()
            wait_port(self.http_port, proc=self.proc)
            return self

        def table(self) -> dict | None:
            """The /iceberg answer for the table (None: not there)."""
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/iceberg/v1/namespaces/"
                                            f"rocketgate/tables/{TOPIC}", timeout=10) as answer:
                    return json.load(answer)
            except OSError:
                return None
    return TablesGateway


@pytest.fixture
def cluster(tmp_path, seaweed_s3, s3_bucket):
    require_etcd()
    c = start_cluster(tmp_path, NODES, ["--replica-lag-time-max-ms", "5000"],
                      gateway=tables_gateway(seaweed_s3, s3_bucket))
    yield c
    c.stop()


def _leaders(admin) -> dict[int, int]:
    parts = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions
    return {p: parts[p].leader for p in parts}


def _produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 60000})
    for i in range(first, first + count):
        producer.produce(TOPIC, b"v%06d" % i, partition=i % PARTITIONS, headers=[("TAGS", b"t%d" % (i % 3))])
        producer.poll(0)
    assert producer.flush(60) == 0


def _log(bootstrap: str, topic: str = TOPIC, partitions: int = PARTITIONS) -> list[tuple]:
    """(partition, offset, value) of every record of the topic."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tables-check", "enable.auto.commit": False})
    _, ends = zip(*(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(partitions)))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, deadline = [], time.monotonic() + 60
    while len(got) < sum(ends) and time.monotonic() < deadline:
        got += [(m.partition(), m.offset(), m.value()) for m in consumer.consume(500, 1.0) if not m.error()]
    consumer.close()
    return sorted(got)


def _rows(gw, topic: str = TOPIC) -> list[tuple]:
    """(partition, offset, value) of every row pyiceberg reads from the table at `gw`'s /iceberg."""
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import NoSuchTableError
    try:
        table = RestCatalog("rg", uri=f"http://127.0.0.1:{gw.http_port}/iceberg").load_table(("rocketgate", topic))
    except NoSuchTableError:
        return []
    return sorted((r["partition"], r["offset"], r["value"]) for r in table.scan().to_arrow().to_pylist())


def _wait_table(gws, gw, log) -> None:
    """Until `gw` serves a table holding at least the log's records (else the gateways' table lines)."""
    try:
        wait_for(lambda: len(_rows(gw)) >= len(log), 120, "the table to hold the log")
    except AssertionError:
        lines = {n: [x for x in g.log().splitlines() if "table" in x.lower()][-15:] for n, g in gws.items()}
        raise AssertionError(f"table has {len(_rows(gw))} rows, log {len(log)}: {json.dumps(lines, indent=1)}")


def test_one_table_across_the_cluster_survives_a_killed_leader(cluster):
    gws = cluster.gateways
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == len(gws), 30, "every gateway a live member")
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=3, config={
        "iceberg.mode": "key_value", "iceberg.commit.interval.ms": "300"})])[TOPIC].result(20)
    wait_for(lambda: all(n in gws for n in _leaders(admin).values()), 30, "leaders")
    _produce(cluster.bootstrap, 0, 300)
    log = _log(cluster.bootstrap)
    assert len(log) == 300
    _wait_table(gws, gws[1], log)
    assert _rows(gws[1]) == log
    # one catalog: every gateway serves the same current metadata
    wait_for(lambda: len({(gw.table() or {}).get("metadata-location") for gw in gws.values()}) == 1, 30,
             "the same table on every gateway")

    victim = _leaders(admin)[0]
    gws[victim].kill9()
    rest = {n: g for n, g in gws.items() if n != victim}
    rest_admin = AdminClient({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in rest.values())})
    wait_for(lambda: all(leader in rest for leader in _leaders(rest_admin).values()), 60, "new leaders")
    bootstrap = ",".join(g.kafka_bootstrap for g in rest.values())
    _produce(bootstrap, 300, 300)
    log = _log(bootstrap)
    assert len(log) >= 600 and len(set(log)) == len(log)
    some = next(iter(rest.values()))
    _wait_table(rest, some, log)
    rows = _rows(some)
    assert len(set(rows)) == len(rows), "a record converted twice"
    assert rows == log
    summary = some.table()["metadata"]
    snap = next(s for s in summary["snapshots"] if s["snapshot-id"] == summary["current-snapshot-id"])
    ends = {p: max(o for q, o, _ in log if q == p) + 1 for p in range(PARTITIONS)}
    assert json.loads(snap["summary"]["rocketgate.next-offsets"]) == {str(p): e for p, e in ends.items()}
