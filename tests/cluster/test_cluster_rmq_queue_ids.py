"""RocketMQ queue ids that keep their meaning when leaders move (issue 26, seed 5102): the Java
rocketmq-client 5.3.3 orderly push consumer of the fault harness (compat.FaultsRocketConsumer)
reads a 6-queue topic of three gateways, the leader of queue 0 stops, more is sent, and every
stored message must reach it.

Queue p holds 3 * (p + 1) messages before the move, so a broker-local id that now names a lower
queue than before (queue 0 moved in at rank 0) keeps the old queue's larger offset in the client:
with rank-numbered ids the consumer skipped the messages sent after the move to that queue. With
the route's static-topic mapping the client numbers queues as the cluster does (mock broker
`__syslo__global__`) and follows each queue to its new leader. Then Java 5 mqadmin consumerProgress
shows the group's offsets by those queues (it maps the brokers' stats with GET_TOPIC_CONFIG's
mappingDetail; without it, it found no consumer)."""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from clusters import require_etcd, start_cluster, wait_for
from compat.jvm import run_admin_batch
from faults.java_load import compile_java, rocketmq_classpath

pytestmark = pytest.mark.timeout(300)
TOPIC, GROUP, QUEUES = "rmq-ids-move", "rmq-ids-move-group", 6


def leaders(admin) -> dict[int, int]:
    return {p: m.leader for p, m in admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.items()}


def produce(gws, counts: dict[int, int], first: int) -> list[int]:
    """`counts[p]` numbered values into queue p (acks=all, each acknowledged); the values sent."""
    producer = Producer({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws), "acks": "all",
                         "message.timeout.ms": 60000})
    failed, values = [], []
    for p, n in counts.items():
        for _ in range(n):
            producer.produce(TOPIC, str(first + len(values)).encode(), partition=p,
                             on_delivery=lambda err, msg: err and failed.append(err))
            values.append(first + len(values))
    assert producer.flush(60) == 0 and not failed, failed
    return values


class JavaConsumer:
    """compat.FaultsRocketConsumer as its own JVM; `received()` reads the values it logged."""

    def __init__(self, tmp_path, namesrv: str) -> None:
        self.log = str(tmp_path / "consumer.jsonl")
        classpath = os.pathsep.join([compile_java(str(tmp_path)), rocketmq_classpath()])
        self.err = open(tmp_path / "consumer.err", "w")
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Duser.home={tmp_path}",
             "-Drocketmq.client.rebalance.waitInterval=1000", "-cp", classpath, "compat.FaultsRocketConsumer",
             namesrv, TOPIC, GROUP, str(time.time()), self.log],
            stdin=subprocess.PIPE, stdout=self.err, stderr=self.err)

    def received(self) -> set[int]:
        if not os.path.exists(self.log):
            return set()
        with open(self.log) as f:
            rows = [json.loads(line) for line in f if line.endswith("\n")]
        return {r["value"] for r in rows if r.get("f") == "receive"}

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.err.close()


@pytest.fixture
def cluster(tmp_path):
    require_etcd()
    c = start_cluster(tmp_path / "cluster")
    yield c
    c.stop()


def test_java_orderly_consumer_misses_nothing_when_a_leader_moves(cluster, tmp_path):
    gws = cluster.gateways
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=QUEUES, replication_factor=3)])[TOPIC].result(10)
    before = wait_for(lambda: (ls := leaders(admin)) and all(n in gws for n in ls.values()) and ls, 20, "leaders")
    sent = produce(gws.values(), {p: 3 * (p + 1) for p in range(QUEUES)}, 0)
    consumer = JavaConsumer(tmp_path, ";".join(g.namesrv for g in gws.values()))
    try:
        wait_for(lambda: consumer.received() >= set(sent), 90, "the first messages consumed")
        moved = before[0]
        gws[moved].stop()
        rest = [g for n, g in gws.items() if n != moved]
        rest_admin = AdminClient({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in rest)})
        wait_for(lambda: all(n not in (-1, moved) for n in leaders(rest_admin).values()), 30, "new leaders")
        sent += produce(rest, {p: 2 for p in range(QUEUES)}, len(sent))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not consumer.received() >= set(sent):
            time.sleep(0.2)
    finally:
        missing = sorted(set(sent) - consumer.received())
        consumer.close()
    assert not missing, f"{len(missing)} stored messages never consumed: {missing}"
    namesrv = next(g.namesrv for n, g in gws.items() if n != moved)
    progress = run_admin_batch([[["consumerProgress", "-n", namesrv, "-g", GROUP]]], str(tmp_path))[0]["output"]
    rows = [line.split() for line in progress.splitlines() if line.startswith(TOPIC + " ")]
    assert sorted((r[1], int(r[2])) for r in rows) == [("__syslo__global__", q) for q in range(QUEUES)], progress
