"""Cluster benchmarks (`make bench-cluster`, docs/replication-figures.md): gateways on etcd beside a
3-node KRaft Apache Kafka on the same machine, measured the same way with librdkafka.

- failover: one partition with replication factor 3, an idempotent acks=all producer sending every
  10 ms; the partition's leader is killed (-9); the figure is the time from the kill to the first
  acknowledgement of a record sent after it. The systems alternate, ROUNDS rounds each; the killed
  node is restarted and back in the in-sync set before the next round. Gateways: lease TTL 3 s.
  Kafka: broker.session.timeout.ms 3000, broker.heartbeat.interval.ms 1000 (the same detection budget).
- throughput: MESSAGES 100-byte records, acks=all, into 4 partitions; 1 gateway and 2 gateways with
  replication factor 1, 2 gateways with replication factor 2, and Kafka (3 nodes) with 1 and 2.

    python -m bench.cluster_bench [--rounds 3] [--messages 100000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import ROOT, java_classpath

sys.path.insert(0, os.path.join(ROOT, "tests"))  # gateway_process, as bench.pop_bench
from tests.cluster.clusters import kraft_nodes, start_cluster, start_kraft  # noqa: E402

LEASE_TTL = 3


class GatewayCluster:
    """Gateways on a private etcd (tests/cluster/clusters.py), started and stopped as one."""
    name = "gateway"

    def __init__(self, base: str, size: int) -> None:
        self.base, self.size = base, size
        self.cluster = None
        self.nodes = {}

    def start(self) -> "GatewayCluster":
        self.cluster = start_cluster(self.base, range(1, self.size + 1), lease_ttl=LEASE_TTL)
        self.nodes = self.cluster.gateways
        return self

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()


class KafkaCluster:
    """Apache Kafka 4.x, 3 KRaft nodes with broker+controller roles (bench/jars/kafka)."""
    name = "kafka"

    def __init__(self, base: str, size: int = 3) -> None:
        self.nodes = kraft_nodes(java_classpath("kafka"), base, size, {
            "broker.session.timeout.ms": LEASE_TTL * 1000, "broker.heartbeat.interval.ms": 1000})

    def start(self) -> "KafkaCluster":
        start_kraft(self.nodes)
        _until(lambda: len(_admin(self).list_topics(timeout=5).brokers) == len(self.nodes), 180, "all brokers")
        return self

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()


def _until(fn, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = fn()
        except Exception:  # a broker being restarted
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def _admin(system, exclude=()) -> AdminClient:
    return AdminClient({"bootstrap.servers": ",".join(n.kafka_bootstrap for i, n in system.nodes.items() if i not in exclude)})


def _partition(system, topic: str, exclude=()):
    return _admin(system, exclude).list_topics(topic, timeout=5).topics[topic].partitions[0]


def create(system, topic: str, partitions: int, rf: int) -> None:
    admin = _admin(system)  # kept until the result is in (a dropped client cancels it)
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)])[topic].result(30)
    _until(lambda: all(len(p.isrs) == rf and p.leader >= 0 for p in
                       _admin(system).list_topics(topic, timeout=5).topics[topic].partitions.values()), 60, "topic ready")


def failover_once(system, topic: str) -> float:
    """Seconds from kill -9 of the partition's leader to the first acknowledged produce sent after it."""
    leader = _partition(system, topic).leader
    producer = Producer({"bootstrap.servers": ",".join(n.kafka_bootstrap for n in system.nodes.values()),
                         "enable.idempotence": True, "acks": "all", "linger.ms": 0, "message.timeout.ms": 60000})
    acked: list[float] = []
    for i in range(20):
        producer.produce(topic, b"warm-%d" % i, partition=0)
    assert producer.flush(30) == 0
    system.nodes[leader].kill9()
    killed = time.monotonic()
    i = 0
    while not acked and time.monotonic() - killed < 60:
        producer.produce(topic, b"after-%d" % i, partition=0,
                         on_delivery=lambda err, _m: err is None and acked.append(time.monotonic()))
        i += 1
        producer.poll(0.01)
    producer.flush(30)
    took = acked[0] - killed if acked else float("nan")
    system.nodes[leader].start()
    _until(lambda: len(_partition(system, topic).isrs) == 3, 180, "the killed node back in sync")
    return took


def throughput(system, topic: str, messages: int) -> float:
    producer = Producer({"bootstrap.servers": ",".join(n.kafka_bootstrap for n in system.nodes.values()),
                         "acks": "all", "linger.ms": 5, "batch.num.messages": 1000, "queue.buffering.max.messages": 200000})
    value = b"x" * 100
    began = time.monotonic()
    for i in range(messages):
        while True:
            try:
                producer.produce(topic, value, partition=i % 4)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return messages / (time.monotonic() - began)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cluster_bench")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--messages", type=int, default=100_000)
    args = p.parse_args(argv)
    base = tempfile.mkdtemp(prefix="cluster-bench-")
    lines = []
    try:
        gw, kafka = GatewayCluster(os.path.join(base, "gw3"), 3), KafkaCluster(os.path.join(base, "k3"))
        try:
            gw.start()
            kafka.start()
            times = {"gateway": [], "kafka": []}
            for system in (gw, kafka):
                create(system, "failover", 1, 3)
            for r in range(args.rounds):
                for system in (gw, kafka):
                    t = failover_once(system, "failover")
                    times[system.name].append(t)
                    print(f"failover round {r + 1} {system.name}: {t:.2f} s", flush=True)
            for name, ts in times.items():
                lines.append(f"failover {name:7}: " + ", ".join(f"{t:.2f}" for t in ts)
                             + f" s (median {statistics.median(ts):.2f} s)")
            for rf in (1, 2):
                create(kafka, f"tp-rf{rf}", 4, rf)
                rate = throughput(kafka, f"tp-rf{rf}", args.messages)
                lines.append(f"throughput kafka (3 nodes) RF{rf}: {rate:,.0f} records/s")
                print(lines[-1], flush=True)
        finally:
            kafka.stop()
            gw.stop()
        for size, rf in ((1, 1), (2, 1), (2, 2)):
            cluster = GatewayCluster(os.path.join(base, f"tp{size}-{rf}"), size)
            try:
                cluster.start()
                create(cluster, "tp", 4, rf)
                rate = throughput(cluster, "tp", args.messages)
                lines.append(f"throughput gateways ({size}) RF{rf}: {rate:,.0f} records/s")
                print(lines[-1], flush=True)
            finally:
                cluster.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
