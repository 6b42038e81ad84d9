"""RocketMQ's native client (client/) on a diskless topic, created with the topic attribute: sends go through the WAL object and the
index, pulls read them back with tags, on the gateway that wrote them and on another one sharing the
bucket; Kafka consumers read the same records."""
from __future__ import annotations

import time

import pytest

from client import Admin, ConsumeFrom, LitePullConsumer, Message, MessageQueue, Producer
from client.errors import MQBrokerError
from acked_records import read_topic
from test_diskless_kafka import FAST_WAL, wal_and_index_keys


def poll_until(consumer, n: int, timeout: float = 30.0) -> list:
    got, deadline = [], time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += consumer.poll(1.0)
    return got


def test_native_send_and_pull_on_a_diskless_topic(seaweed_s3, s3_bucket, gateway_factory):
    args = seaweed_s3.tier_args(s3_bucket) + FAST_WAL
    a = gateway_factory(extra_args=args, name="a")
    with Admin(a.namesrv) as admin:  # RocketMQ 5 topic attributes: "+diskless.enable=true"
        admin.create_topic("dlrmq", queues=1, attributes={"diskless.enable": "true"})
        with pytest.raises(MQBrokerError) as fixed:  # fixed at creation, as KIP-1150
            admin.create_topic("dlrmq", queues=1, attributes={"diskless.enable": "false"})
        assert "when the topic is created" in fixed.value.remark
    q = MessageQueue("dlrmq", "broker-a", 0)
    with Producer("dl-producer", a.namesrv) as p:
        sent = [p.send(Message("dlrmq", b"m%d" % i, tags="A" if i % 2 == 0 else "B", keys="k%d" % i), queue=q)
                for i in range(6)]
    assert [r.queue_offset for r in sent] == list(range(6))
    assert any("/diskless/index/dlrmq@" in k and k.split("/")[-2] == "0" for k in wal_and_index_keys(seaweed_s3, s3_bucket))
    b = gateway_factory(extra_args=args, name="b")  # the same bucket, its own data dir
    for g in (a, b):
        c = LitePullConsumer("dl-group", g.namesrv, auto_commit=False, consume_from=ConsumeFrom.FIRST_OFFSET)
        c.start()
        try:
            c.assign([q])
            got = poll_until(c, 6)
            assert [(m.body, m.tags, m.keys, m.queue_offset) for m in got] == [
                (b"m%d" % i, "A" if i % 2 == 0 else "B", ["k%d" % i], i) for i in range(6)]
        finally:
            c.shutdown()
    tagged = LitePullConsumer("dl-tags", b.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    tagged.subscribe("dlrmq", "B")
    tagged.start()
    try:
        assert [m.body for m in poll_until(tagged, 3)] == [b"m1", b"m3", b"m5"]
    finally:
        tagged.shutdown()
    assert sorted(read_topic(b.kafka_bootstrap, "dlrmq")) == sorted(b"m%d" % i for i in range(6))
