"""Kafka ⇄ native RocketMQ client over one gateway: messages and group offsets cross protocols."""
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from client import Admin, ConsumeFrom, ConsumeStatus, LitePullConsumer, Message, MessageQueue, Producer, PushConsumer
from codec.remoting.message import make_msg_id


def poll_until(consumer, n, timeout=20.0):
    got, deadline = [], time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += consumer.poll(1.0)
    return got


def test_kafka_producer_to_native_consumer(gateway):
    kp = KafkaProducer(bootstrap_servers=gateway.kafka_bootstrap, linger_ms=50)
    for i in range(4):
        kp.send("KafkaToNative", key=b"key%d" % i, value=b"v%d" % i, partition=0,
                headers=[("TAGS", b"A" if i % 2 == 0 else b"B"), ("color", b"blue")])
    kp.flush()
    kp.close()
    q = MessageQueue("KafkaToNative", "broker-a", 0)
    c = LitePullConsumer("k2n", gateway.namesrv, auto_commit=False, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    try:
        c.assign([q])
        got = poll_until(c, 4)
        assert [(m.body, m.keys, m.tags, m.properties["color"], m.queue_offset) for m in got] == [
            (b"v%d" % i, ["key%d" % i], "A" if i % 2 == 0 else "B", "blue", i) for i in range(4)]
        c.seek(q, 2)  # into the middle of a stored Kafka batch
        assert [m.body for m in poll_until(c, 2)] == [b"v2", b"v3"]
        c.commit()
    finally:
        c.shutdown()
    tagged = LitePullConsumer("k2n-tags", gateway.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    tagged.subscribe("KafkaToNative", "B")
    tagged.start()
    try:
        assert [m.body for m in poll_until(tagged, 2)] == [b"v1", b"v3"]
    finally:
        tagged.shutdown()
    # The native group's committed offset is the Kafka group's committed offset.
    kc = KafkaConsumer(bootstrap_servers=gateway.kafka_bootstrap, group_id="k2n", enable_auto_commit=False)
    assert kc.committed(TopicPartition("KafkaToNative", 0)) == 4
    kc.close()


def test_native_producer_to_kafka_consumer(gateway):
    with Producer("n2k", gateway.namesrv) as p:
        p.send(Message("NativeToKafka", b"native", tags="T1", keys="k1", properties={"color": "red"}),
               queue=MessageQueue("NativeToKafka", "broker-a", 0))
    kc = KafkaConsumer(bootstrap_servers=gateway.kafka_bootstrap, auto_offset_reset="earliest",
                       consumer_timeout_ms=10000)
    kc.assign([TopicPartition("NativeToKafka", 0)])
    records = [r for r, _ in zip(kc, range(1))]
    kc.close()
    assert len(records) == 1
    r = records[0]
    headers = dict(r.headers)
    assert (r.key, r.value, r.offset) == (b"k1", b"native", 0)
    assert headers["TAGS"] == b"T1" and headers["color"] == b"red" and headers["KEYS"] == b"k1"


def test_kafka_records_query_and_send_back(gateway):
    """Records of a stored Kafka batch are found by key, and one a RocketMQ listener rejects is
    re-delivered alone through the group's retry topic."""
    kp = KafkaProducer(bootstrap_servers=gateway.kafka_bootstrap, linger_ms=50)
    for i in range(3):
        kp.send("KafkaRetry", key=b"rk%d" % i, value=b"r%d" % i, partition=0)
    kp.flush()
    kp.close()
    with Admin(gateway.namesrv) as admin:
        found = admin.query_by_key("KafkaRetry", "rk1")
        assert [(m.body, m.keys) for m in found] == [(b"r1", ["rk1"])]
        host, port = gateway.namesrv.split(":")
        entry_id = make_msg_id(host, int(port), found[0].commit_log_offset)
        assert admin.view_message(entry_id).body == b"r0"  # the entry's first record
    got = []

    def listener(msgs):
        got.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER if msgs[0].body == b"r1" and msgs[0].reconsume_times == 0 \
            else ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer("kafka-retry-g", gateway.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("KafkaRetry")
    c.register_listener(listener)
    c.start()
    try:
        deadline = time.monotonic() + 40  # delay level 3 = 10 s
        while len(got) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        c.shutdown()
    assert [m.body for m in got] == [b"r0", b"r1", b"r2", b"r1"]
    assert got[3].msg_id == got[1].msg_id and got[3].reconsume_times == 1 and got[3].keys == ["rk1"]
    assert got[3].topic == "KafkaRetry"
