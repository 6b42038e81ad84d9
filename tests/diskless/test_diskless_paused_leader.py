"""Fencing a paused old leader of a diskless queue, with real processes (issue 28): two gateways and
etcd on one bucket. An idempotent librdkafka producer's batch sits in the leader's WAL buffer when the
leader is frozen (SIGSTOP); its lease expires, the other gateway leads the queue, takes the producer's
retry of that batch and new writes; then the old leader is resumed (SIGCONT) and its buffered batch
reaches the index after the new leader's entries. It must not be committed a second time: a real
consumer reads every acknowledged record of the queue exactly once. (The same rule in-process:
`test_a_lost_slot_holding_the_same_idempotent_batch_is_not_committed_again`.)"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from acked_records import read_topic
from objstore_fixtures import object_store_on
from store.diskless.index import AlreadyCommitted, DisklessIndex

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from clusters import require_etcd, start_cluster, wait_for  # noqa: E402

TOPIC = "dlpause"
WAL_MS = 1000  # a batch waits this long in the WAL buffer: time to freeze its gateway with it


def _leader(admin) -> int:
    md = admin.list_topics(TOPIC, timeout=10)
    parts = md.topics[TOPIC].partitions if TOPIC in md.topics else {}
    return parts[0].leader if 0 in parts else -1


def _entries(seaweed_s3, bucket: str) -> list:
    """(seq, wal, base, count, producers) of the queue's index entries, for a failure's message."""
    client = seaweed_s3.client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", []) if "/index/" in o["Key"]]
    return [(k.rsplit("/", 1)[1], e["wal"][-6:], e["base"], e["count"], e["producers"]) for k in keys
            for e in [json.loads(client.get_object(Bucket=bucket, Key=k)["Body"].read())]]


def _send(producer, prefix: bytes, count: int, acked: list, failed: list) -> None:
    def report(err, msg):
        (failed if err is not None else acked).append(err or msg.value())
    for i in range(count):
        producer.produce(TOPIC, value=prefix + b"-%d" % i, partition=0, on_delivery=report)
    producer.poll(0)


def test_a_paused_old_leader_does_not_commit_a_batch_its_successor_took(seaweed_s3, s3_bucket, tmp_path):
    require_etcd()
    cluster = start_cluster(tmp_path / "cluster", (1, 2), extra_args=[
        *seaweed_s3.tier_args(s3_bucket), "--diskless-wal-max-ms", str(WAL_MS)])
    paused = None
    try:
        gws = cluster.gateways
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        # both members registered before a replication factor of 2 is asked (under load the view of the
        # gateway asked may not list the second yet: INVALID_REPLICATION_FACTOR)
        wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == 2, 60, "both gateways registered")
        admin.create_topics([NewTopic(TOPIC, 1, 2, config={"diskless.enable": "true"})])[TOPIC].result(30)
        old = wait_for(lambda: _leader(admin) in gws and _leader(admin), what="a leader")
        new = next(n for n in gws if n != old)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5, "request.timeout.ms": 4000, "message.timeout.ms": 90000})
        acked, failed = [], []
        _send(producer, b"a", 20, acked, failed)
        assert producer.flush(30) == 0 and len(acked) == 20, failed
        _send(producer, b"b", 20, acked, failed)
        time.sleep(WAL_MS / 4000)  # the batch joined the leader's WAL buffer, which closes later
        paused = gws[old].proc
        os.kill(paused.pid, signal.SIGSTOP)
        survivor = AdminClient({"bootstrap.servers": gws[new].kafka_bootstrap})
        wait_for(lambda: _leader(survivor) == new, timeout=60, what="the other gateway to lead the queue")
        assert producer.flush(90) == 0 and len(acked) == 40, failed  # the batch, retried to the new leader
        _send(producer, b"c", 20, acked, failed)
        assert producer.flush(30) == 0 and len(acked) == 60, failed
        os.kill(paused.pid, signal.SIGCONT)
        paused = None
        # the old leader's buffer closes as it wakes; its WAL PUT and index write follow at once
        wait_for(lambda: AdminClient({"bootstrap.servers": gws[old].kafka_bootstrap}).list_topics(timeout=5),
                 timeout=30, what="the old leader to answer again")
        time.sleep(3 * WAL_MS / 1000)
        _send(producer, b"d", 20, acked, failed)  # the queue still takes writes after it
        assert producer.flush(30) == 0 and len(acked) == 80, failed
        producer.flush(5)
        for g in (gws[new], gws[old]):
            got = read_topic(g.kafka_bootstrap, TOPIC)
            assert len(got) == len(set(got)), _entries(seaweed_s3, s3_bucket)
            assert sorted(got) == sorted(acked)
    finally:
        if paused is not None:
            os.kill(paused.pid, signal.SIGCONT)
        cluster.stop()


def test_a_lost_slot_holding_the_same_idempotent_batch_is_not_committed_again(seaweed_s3, s3_bucket):
    stores = [object_store_on(seaweed_s3, s3_bucket, prefix="q/") for _ in range(2)]
    try:
        old, new = (DisklessIndex(s) for s in stores)
        assert old.refresh("t", 0) == new.refresh("t", 0) == 0  # both see the same tail
        batch = ((7, 0, 0, 5, 0),)  # producer 7, epoch 0, sequences 0-4
        new.commit("t", 0, "wal-new", 0, b"x" * 10, 5, producers=batch)  # the producer's retry
        with pytest.raises(AlreadyCommitted):
            old.commit("t", 0, "wal-old", 0, b"x" * 10, 5, producers=batch)
        other = old.commit("t", 0, "wal-old", 10, b"y" * 10, 3, producers=((7, 0, 5, 3, 0),))  # the next batch
        assert (other.seq, other.base) == (1, 5)
        plain = new.commit("t", 0, "wal-new", 10, b"z" * 10, 2)  # a race without idempotence: after it
        assert (plain.seq, plain.base) == (2, 8)
    finally:
        for s in stores:
            s.close()
