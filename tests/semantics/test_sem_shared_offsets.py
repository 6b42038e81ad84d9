"""One offset table for both protocols, durable across kill -9 (--flush sync): a group that
consumed half of a topic through one protocol continues through the other from the same place."""
from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

from client import ConsumeFrom, LitePullConsumer, MessageQueue
from semantics_fixtures import confluent_group_read, native_lite_read
from shard_aware import partition_leaders, rocketmq_queue

PER_PARTITION = 10
HALF = 5


def _fill(bootstrap: str, topic: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(2 * PER_PARTITION):
        p.produce(topic, value=f"v{i % 2}-{i // 2}".encode(), partition=i % 2)
    assert p.flush(30) == 0


def _second_half() -> list[str]:
    return sorted(f"v{p}-{i}" for p in range(2) for i in range(HALF, PER_PARTITION))


def test_kafka_commit_then_native_continues_after_kill9(gateway_factory):
    g = gateway_factory(flush="sync")
    topic, group = f"shared-k2n-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    _fill(g.kafka_bootstrap, topic)
    c = Consumer({"bootstrap.servers": g.kafka_bootstrap, "group.id": group, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(2)])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 2 * PER_PARTITION and time.monotonic() < deadline:
        m = c.poll(0.5)
        seen += m is not None and m.error() is None
    c.commit(offsets=[TopicPartition(topic, p, HALF) for p in range(2)], asynchronous=False)
    c.close()
    g.kill9()
    g.start()
    assert native_lite_read(g, group, topic, PER_PARTITION) == _second_half()


def test_native_commit_then_kafka_continues_after_kill9(gateway_factory):
    g = gateway_factory(flush="sync")
    topic, group = f"shared-n2k-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    _fill(g.kafka_bootstrap, topic)
    leaders = partition_leaders(g.kafka_bootstrap, topic)  # partitions 0 and 1 as RocketMQ names them
    queues = [MessageQueue(topic, *rocketmq_queue(leaders, p)) for p in range(2)]
    c = LitePullConsumer(group, g.namesrv, auto_commit=False, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    try:
        c.assign(queues)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 2 * PER_PARTITION and time.monotonic() < deadline:
            got += c.poll(1.0)
        assert len(got) == 2 * PER_PARTITION
        c.commit({q: HALF for q in queues})
    finally:
        c.shutdown()
    g.kill9()
    g.start()
    assert confluent_group_read(g, group, topic, PER_PARTITION, commit=False) == _second_half()
