"""`rocketgate cluster move` on `python -m gateway --shards 2` (docs/cluster.md, "Moving a queue"): a
partition led by shard 0 is moved with its records to shard 1 while an acks=all producer keeps
writing to it; afterwards every acknowledged record is read back in order from the new leader and
writes go on."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from gateway_process import ROOT
from tests.shards.sharded import Sharded, wait_for

TOPIC = "moving"


def cluster_cli(data_dir: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway.admin", "--json", "cluster", *args, "--data-dir", data_dir],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def assignment(data_dir: str) -> dict[int, dict]:
    done = cluster_cli(data_dir, "assignment", TOPIC)
    assert done.returncode == 0, done.stderr
    return {row["queue"]: row for row in json.loads(done.stdout)}


def read_all(bootstrap: str, partition: int, want: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "move-check", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, partition, 0)])
        values: list[bytes] = []
        errors: list = []

        def more():
            for msg in consumer.consume(500, 0.5):
                (values.append(msg.value()) if msg.error() is None else errors.append(msg.error()))
            return len(values) >= want
        wait_for(more, what=f"{want} records of partition {partition} (errors: {errors})")
        return values
    finally:
        consumer.close()


def test_move_a_partition_to_the_other_shard_under_writes(tmp_path):
    sharded = Sharded(str(tmp_path), shards=2)
    try:
        sharded.start()
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
        before = wait_for(lambda: (a := assignment(sharded.data_dir)) and len(a) == 2 and a)
        partition = next(q for q, row in before.items() if row["leader"] == 1)
        producer = Producer({"bootstrap.servers": sharded.kafka_bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5})
        acked, failed = [], []

        def delivered(err, msg):
            (failed if err is not None else acked).append(msg.value() if err is None else err)

        sent = [0]

        def produce(until) -> None:
            while not until():
                producer.produce(TOPIC, f"r{sent[0]:05d}".encode(), partition=partition, on_delivery=delivered)
                sent[0] += 1
                producer.poll(0)
                if sent[0] % 20 == 0:
                    producer.flush(30)
                    time.sleep(0.01)

        produce(lambda: sent[0] >= 300)
        assert producer.flush(30) == 0
        moved_done = threading.Event()
        writing = threading.Thread(target=produce, args=(moved_done.is_set,))
        writing.start()
        try:
            moved = cluster_cli(sharded.data_dir, "move", TOPIC, str(partition), "--to", "2")
        finally:
            moved_done.set()
            writing.join()
        assert moved.returncode == 0, moved.stderr
        assert "in sync" in moved.stderr and "leads" in moved.stderr
        during = sent[0]
        produce(lambda: sent[0] >= during + 100)  # writes go on at the new leader
        assert producer.flush(60) == 0
        after = assignment(sharded.data_dir)[partition]
        values = read_all(sharded.kafka_bootstrap, partition, len(acked))
    finally:
        sharded.stop()
    assert failed == []
    assert (after["leader"], after["replicas"]) == (2, "2")
    assert during > 300  # the move happened while records were written
    assert values == sorted(acked) == [f"r{i:05d}".encode() for i in range(sent[0])]
