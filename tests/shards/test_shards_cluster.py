"""`--shards 2 --cluster etcd://... --node-id 1` beside a one-process gateway of the same cluster
(node 3), real: the shards join that etcd as nodes 1 and 2 (no private etcd), Kafka Metadata lists
all three brokers, a topic's partitions are led by all three, and every record produced through
shard 0 is read back once. `--shards` with `--cluster` and no `--node-id` is refused with one line."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from acked_records import read_topic
from gateway_process import ROOT
from sharded import Sharded, wait_for
from test_shards import produce

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
from clusters import require_etcd, start_cluster, start_etcd  # noqa: E402

TOPIC, PARTITIONS = "shards-in-cluster", 6


def test_shards_join_a_cluster_beside_a_one_process_gateway(tmp_path):
    require_etcd()
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 usable cores")
    etcd = start_etcd(tmp_path)
    os.makedirs(tmp_path / "machine-a")
    sharded, single, status = Sharded(str(tmp_path / "machine-a")), None, None
    try:
        single = start_cluster(tmp_path / "machine-b", nodes=(3,), etcd=etcd, lease_ttl=None)
        sharded.extra_args += ["--cluster", etcd.url, "--node-id", "1"]
        sharded.start(brokers=[1, 2, 3])
        assert not os.path.exists(tmp_path / "machine-a" / "data" / "etcd")  # no private etcd
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)

        def leaders():
            md = admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions
            return len(md) == PARTITIONS and {m.leader for m in md.values()} == {1, 2, 3}
        wait_for(leaders, what="partitions led by both shards and the other gateway")
        values = [b"c%03d" % i for i in range(120)]
        produce(sharded, TOPIC, values[:60])
        produce(single.gateways[3], TOPIC, values[60:])
        assert sorted(read_topic(sharded.kafka_bootstrap, TOPIC)) == values
    finally:
        status = sharded.stop()
        if single is not None:
            single.gateways[3].stop()
        etcd.stop()
    assert status == 0


def test_shards_in_a_cluster_need_a_node_id(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 usable cores")
    result = subprocess.run([sys.executable, "-m", "gateway", "--shards", "2", "--cluster", "etcd://127.0.0.1:1",
                             "--data-dir", str(tmp_path / "d")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --shards with --cluster needs --node-id B >= 1: shard i is node B + i of the cluster (docs/shards.md)"]
