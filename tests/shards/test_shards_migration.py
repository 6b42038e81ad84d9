"""A one-process gateway's data dir started with `--shards 2`, real: the supervisor moves the store
into shard-0, every record is read back, a Kafka group's committed offsets are kept (read through
the group's coordinator, which is shard 1: the offsets travelled through etcd) and it resumes with
only what came later; a topic made afterwards spreads over both shards. Then a one-process gateway
on the sharded dir is refused with one line naming the command that starts it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from acked_records import read_topic
from cluster.model import coordinator_of
from gateway_process import ROOT, GatewayProcess
from sharded import Sharded, require_etcd
from test_shards import PARTITIONS, consume, create_topic, produce

TOPIC, RECORDS = "migrated-orders", 200
# a group whose coordinator is shard 1 (node 2), which never had the one-process offset table
GROUP = next(g for g in (f"migrated-g{i}" for i in range(100)) if coordinator_of(g, [1, 2]) == 2)


def committed(bootstrap: str) -> dict[int, int | None]:
    check = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        return {p: check.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)}
    finally:
        check.close()


def test_shards_take_over_a_one_process_data_dir_and_one_process_is_refused_a_sharded_one(tmp_path):
    require_etcd()
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 usable cores")
    values = [b"old%03d" % i for i in range(RECORDS)]
    single = GatewayProcess(str(tmp_path / "data"))
    try:
        single.start()
        admin = AdminClient({"bootstrap.servers": single.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
        produce(single, TOPIC, values)
        assert sorted(consume(single, TOPIC, GROUP, RECORDS)) == values
    finally:
        assert single.stop() == 0
    sharded = Sharded(str(tmp_path))
    try:
        sharded.start()
        assert sorted(os.listdir(tmp_path / "data" / "shard-0")).count("commitlog") == 1
        assert sorted(read_topic(sharded.kafka_bootstrap, TOPIC)) == values
        assert committed(sharded.kafka_bootstrap) == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
        later = [b"later%d" % i for i in range(8)]
        produce(sharded, TOPIC, later)
        assert sorted(consume(sharded, TOPIC, GROUP, len(later))) == later
        assert set(create_topic(sharded, "made-after-migration").values()) == {1, 2}
    finally:
        assert sharded.stop() == 0
    result = subprocess.run([sys.executable, "-m", "gateway", "--data-dir", str(tmp_path / "data")], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"rocketgate: error: data dir {str(tmp_path / 'data')!r} holds the stores of 2 shards "
        f"(shard-0, shard-1): start it with --shards 2"]
