"""Dead letters under `--shards 2` (docs/shards.md, "Dead letters"): a consumer fails every message
of a topic whose queues both shards lead (maxReconsumeTimes 0: each send-back is a dead letter),
and a Kafka consumer of `%DLQ%<group>` at the bootstrap reads every dead letter once, in its one
partition (led by shard 0), whichever shard made it. Before, each shard kept its own `%DLQ%` copy
and Kafka Metadata named the answering shard, so the reader saw shard 0's half only."""
from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from client import ConsumeFrom, ConsumeStatus, Message, PushConsumer
from client import Producer as NativeProducer
from sharded import wait_for
from test_shards import create_topic, sharded  # noqa: F401 (the module's own --shards 2)

COUNT = 8


def test_dead_letters_of_both_shards_are_one_kafka_partition(sharded):  # noqa: F811
    topic, group = f"dead-{uuid.uuid4().hex[:6]}", f"G{uuid.uuid4().hex[:6]}"
    assert set(create_topic(sharded, topic).values()) == {1, 2}
    namesrv = f"127.0.0.1:{sharded.remoting_port}"
    with NativeProducer("dead-producer", namesrv) as p:
        brokers = {p.send(Message(topic, b"poison-%d" % i)).queue.broker_name for i in range(COUNT)}
    assert brokers == {"broker-1", "broker-2"}
    failed, lock = [], threading.Lock()

    def fail(msgs):
        with lock:
            failed.extend(m.body for m in msgs)
        return ConsumeStatus.RECONSUME_LATER

    c = PushConsumer(group, namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, max_reconsume_times=0)
    c.subscribe(topic, "*")
    c.register_listener(fail)
    c.start()
    dlq = f"%DLQ%{group}"
    k = Consumer({"bootstrap.servers": sharded.kafka_bootstrap, "group.id": "dlq-reader", "enable.auto.commit": False})
    got = []
    try:
        wait_for(lambda: len(failed) >= COUNT, 60, "every message consumed and failed once")
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})

        def one_partition():
            md = admin.list_topics(dlq, timeout=5).topics.get(dlq)
            return md is not None and md.error is None and {p: m.leader for p, m in md.partitions.items()}
        assert wait_for(one_partition, 30, f"{dlq} in Metadata") == {0: 1}
        k.assign([TopicPartition(dlq, 0, 0)])
        deadline = time.monotonic() + 30
        while len(got) < COUNT and time.monotonic() < deadline:
            m = k.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
        extra = k.poll(2.0)
    finally:
        c.shutdown()
        k.close()
    assert sorted(m.value() for m in got) == [b"poison-%d" % i for i in range(COUNT)]
    assert extra is None or extra.error() is not None
    assert all(dict(m.headers())["RETRY_TOPIC"] == topic.encode() for m in got)
