"""Table topics under `--shards 2` without a tier (docs/shards.md, "Table topics"): the shards keep
one Iceberg catalog and warehouse in DATA_DIR/shared-tables, each shard converting the queues it
leads and committing to that one table, so a real Iceberg reader (pyiceberg) at shard 0's /iceberg
reads every record of a topic led by both shards, each once. Before, each shard had its own catalog
in its store and shard 0's /iceberg held shard 0's partitions only."""
from __future__ import annotations

import json
import os
import sys
import urllib.request

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from gateway_process import free_port, wait_port
from sharded import Sharded, require_etcd, wait_for
from test_shards import PARTITIONS, produce

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
from test_cluster_tables import _log, _rows  # noqa: E402 - the cluster's table checks, on one catalog here

TOPIC, RECORDS = "sharded-clicks", 200


@pytest.fixture
def sharded(tmp_path):
    require_etcd()
    gw = Sharded(str(tmp_path))
    gw.http_port = free_port()
    gw.extra_args += ["--http-port", str(gw.http_port)]
    try:
        gw.start()
        wait_port(gw.http_port, timeout=60, proc=gw.proc)
        yield gw
    finally:
        gw.stop()


def test_a_table_topic_of_both_shards_is_one_table(sharded):
    admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config={
        "iceberg.mode": "key_value", "iceberg.commit.interval.ms": "300"})])[TOPIC].result(20)

    def leaders():
        parts = admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions
        found = {p: m.leader for p, m in parts.items()}
        return len(found) == PARTITIONS and all(v > 0 for v in found.values()) and found
    assert set(wait_for(leaders, what="every partition to have a leader").values()) == {1, 2}
    produce(sharded, TOPIC, [b"c%04d" % i for i in range(RECORDS)])
    log = _log(sharded.kafka_bootstrap, TOPIC, PARTITIONS)
    assert len(log) == RECORDS
    try:
        wait_for(lambda: len(_rows(sharded, TOPIC)) >= RECORDS, 90, "the table to hold every record")
    except TimeoutError:
        raise AssertionError(f"the table at shard 0 holds {len(_rows(sharded, TOPIC))} of {RECORDS} records") from None
    rows = _rows(sharded, TOPIC)
    assert rows == log  # every record of both shards' partitions, each once
    with urllib.request.urlopen(f"http://127.0.0.1:{sharded.http_port}/iceberg/v1/namespaces/rocketgate/"
                                f"tables/{TOPIC}", timeout=10) as answer:
        table = json.load(answer)
    shared = os.path.join(sharded.data_dir, "shared-tables", "warehouse")
    assert table["metadata-location"].startswith(f"file://{shared}/")
    meta = table["metadata"]
    snap = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    ends = {str(p): max(o for q, o, _ in log if q == p) + 1 for p in range(PARTITIONS)}
    assert json.loads(snap["summary"]["rocketgate.next-offsets"]) == ends
