"""Leader epochs across a failover, three real gateways and a real etcd: served batches carry the
epoch that wrote them, and a Java consumer (kafka-clients 4.2's console consumer, assigned to the
partition, no group) whose leader is killed (-9) validates its position with the new leader
(OffsetForLeaderEpoch, KIP-320) and goes on reading every record exactly once, without a reset."""
from __future__ import annotations

import subprocess
import threading
import time

from confluent_kafka import Producer

from clusters import NODES, require_etcd, start_cluster
from codec.kafka import records
from compat.jvm import JVM_FLAGS, KAFKA_TOOLS, classpath
from raw_kafka import KafkaRaw
from test_cluster_clients import wait_for
from test_cluster_failover import elected_after, replicated_partition

TOPIC = "epochs"
FIRST, SECOND = [f"a{i:03d}" for i in range(20)], [f"b{i:03d}" for i in range(20)]


def _produce(gws, values: list[str]) -> None:
    p = Producer({"bootstrap.servers": ",".join(g.kafka_bootstrap for g in gws.values()), "acks": "all",
                  "message.timeout.ms": 60000})
    for v in values:
        p.produce(TOPIC, v.encode(), partition=0)
    assert p.flush(90) == 0


def _batch_epochs(gw) -> set[int]:
    raw = KafkaRaw("127.0.0.1", gw.kafka_port)
    try:
        data = bytes(raw.fetch(TOPIC, 0)["records"] or b"")
    finally:
        raw.close()
    return {b.leader_epoch for b in records.parse_batches(data)}


def test_java_consumer_validates_its_position_after_a_failover(tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path / "cluster", NODES, ["--replica-lag-time-max-ms", "5000"])
    consumer = None
    try:
        gws = cluster.gateways
        first = replicated_partition(gws, TOPIC)
        _produce(gws, FIRST)
        assert _batch_epochs(gws[first.leader]) == {0}  # the placement's first epoch wrote them

        cmd = ["java", *JVM_FLAGS, "-Dorg.slf4j.simpleLogger.log.org.apache.kafka=debug", "-cp",
               classpath("kafkatools"), KAFKA_TOOLS["kafka-console-consumer"],
               "--bootstrap-server", ",".join(g.kafka_bootstrap for g in gws.values()), "--topic", TOPIC,
               "--partition", "0", "--offset", "earliest", "--max-messages", str(len(FIRST) + len(SECOND)),
               "--timeout-ms", "120000"]
        log = open(tmp_path / "consumer.log", "w")
        consumer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, cwd=str(tmp_path))
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.extend(line.strip() for line in consumer.stdout), daemon=True)
        reader.start()
        wait_for(lambda: len(got) >= len(FIRST), 90, what="the first records consumed")

        gws[first.leader].kill9()
        _admin, now = elected_after(gws, first.leader, TOPIC)
        survivors = {n: g for n, g in gws.items() if n != first.leader}
        _produce(survivors, SECOND)
        consumer.wait(timeout=150)
        reader.join(10)
        assert got == FIRST + SECOND  # every record once, in order: no reset, no re-read
        assert _batch_epochs(gws[now.leader]) == {0, 1}  # the new leader's epoch wrote the second half

        text = open(tmp_path / "consumer.log").read()
        asked = [line for line in text.splitlines() if "Sending OFFSET_FOR_LEADER_EPOCH" in line]
        assert asked and "currentLeaderEpoch=1, leaderEpoch=0" in asked[-1], "no validation with the new leader"
        assert "Truncation detected" not in text
        resets = [line for line in text.splitlines() if "Resetting offset" in line]
        assert len(resets) == 1 and "offset=0, offsetEpoch=Optional.empty" in resets[0]  # only --offset earliest
    finally:
        if consumer is not None and consumer.poll() is None:
            consumer.kill()
            consumer.wait()
        cluster.stop()
