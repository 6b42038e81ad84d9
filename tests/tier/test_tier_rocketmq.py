"""The repo's native RocketMQ client on a gateway whose sealed files go to a real S3 server: the
tiering configs as UPDATE_AND_CREATE_TOPIC attributes, pulls from the first offset after the local
files are gone, min offset / search by time / view by msgId below the local start, and the same
data served by a gateway that lost its disk (pull, POP, by key and by CommitLog offset)."""
from __future__ import annotations

import time

from client import Admin, ConsumeFrom, LitePullConsumer, Message, MessageQueue, Producer, SimpleConsumer
from client.errors import MQBrokerError
from codec.remoting.message import make_msg_id, parse_msg_id

from tests.tier.tier_gateway import TIERED, local_files, tier_gateway, wait_local_deleted

N = 600
TOPIC = "rmq-tiered"


def pull_all(gw, n: int) -> list[bytes]:
    c = LitePullConsumer("tier-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe(TOPIC, "*")
    c.start()
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < n and time.monotonic() < deadline:
            got.extend(m.body for m in c.poll(1.0))
    finally:
        c.shutdown()
    return got


def pop_all(gw, n: int, topic: str = TOPIC, group: str = "tier-pop") -> list[bytes]:
    """POP (remoting, the RocketMQ 5 SimpleConsumer) from the first offset, acking each message."""
    got, deadline = [], time.monotonic() + 60
    with SimpleConsumer(group, gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET,
                        subscriptions={topic: "*"}, await_duration=1) as c:
        while len(got) < n and time.monotonic() < deadline:
            batch = c.receive(max_messages=32, invisible_duration=60)
            for m in batch:
                c.ack(m)
            got += batch
    return [m.body for m in sorted(got, key=lambda m: m.queue_offset)]


def test_pull_view_and_search_below_the_local_start_then_disk_loss(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    with Admin(gw.namesrv) as admin:
        try:
            admin.create_topic("rmq-bad", queues=1, attributes={"remote.storage.enable": "true",
                                                               "retention.ms": "1000", "local.retention.ms": "5000"})
            refused = None
        except MQBrokerError as exc:
            refused = str(exc)
        assert refused is not None and "Value must not be more than retention.ms property value: 1000" in refused
        admin.create_topic(TOPIC, queues=1, attributes=TIERED)
    t0 = int(time.time() * 1000)
    bodies = [b"%05d|" % i + b"r" * 1000 for i in range(N)]
    with Producer("tier-pg", gw.namesrv) as prod:
        sent = [prod.send(Message(TOPIC, b, keys=f"key{i}")) for i, b in enumerate(bodies)]
    wait_local_deleted(gw)
    mq = MessageQueue(TOPIC, sent[0].queue.broker_name, 0)
    with Admin(gw.namesrv) as admin:
        assert admin.min_offset(mq) == 0
        assert admin.search_offset(mq, t0 - 1000) == 0
        assert admin.view_message(sent[0].offset_msg_id).body == bodies[0]  # by msgId, from the tier
        assert [m.body for m in admin.query_by_key(TOPIC, "key3")] == [bodies[3]]  # by key, from the tier
    assert pull_all(gw, N) == bodies
    assert pop_all(gw, N) == bodies

    gw.kill9()
    fresh = tier_gateway(gateway_factory, seaweed_s3, s3_bucket, name="empty")
    assert local_files(fresh) == []
    with Admin(fresh.namesrv) as admin:
        end = admin.max_offset(mq)
        assert 0 < end <= N
        assert admin.topic_config()[TOPIC]["attributes"]["remote.storage.enable"] == "true"
        assert [m.body for m in admin.query_by_key(TOPIC, "key3")] == [bodies[3]]  # no IndexFile left at all
        _host, _port, phys = parse_msg_id(sent[0].offset_msg_id)  # the same CommitLog offset, at the new address
        assert admin.view_message(make_msg_id("127.0.0.1", fresh.remoting_port, phys)).body == bodies[0]
    assert pull_all(fresh, end) == bodies[:end]
    assert pop_all(fresh, end, group="tier-pop-after-loss") == bodies[:end]


def test_the_pop_log_does_not_keep_local_files(gateway_factory, seaweed_s3, s3_bucket):
    """POP ops on a single gateway go to its node log RMQ_SYS_POP_LOG (untiered), here into CommitLog
    file 0. Superseded once a snapshot covers them, they are carried forward (semantics.pop_carry: a
    snapshot is written when the file could otherwise go), so file 0 goes with local retention, where
    before it stayed until --file-reserved-hours (72 h); the group goes on where it was."""
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    topic = "rmq-popped"
    with Admin(gw.namesrv) as admin:
        admin.create_topic(topic, queues=1, attributes=TIERED)
    first = [b"first%d" % i for i in range(10)]
    rest = [b"%05d|" % i + b"r" * 1000 for i in range(N)]
    with Producer("tier-pp", gw.namesrv) as prod:
        for b in first:
            prod.send(Message(topic, b))
        assert pop_all(gw, len(first), topic) == first  # pops and acks logged into file 0
        for b in rest:
            prod.send(Message(topic, b))
    wait_local_deleted(gw)
    assert pop_all(gw, N, topic) == rest
