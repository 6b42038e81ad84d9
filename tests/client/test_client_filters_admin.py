"""SQL92 subscriptions filtered by the gateway, subscription refusal, %RETRY% creation,
consumer running info forwarded to the consumer, and re-sending a dead letter (native client)."""
import time

import pytest

from client import ConsumeFrom, LitePullConsumer, Message, MessageQueue, MQBrokerError, PushConsumer
from codec.remoting import ResponseCode
from dead_letters import dead_lettering
from test_native_client import Collector, admin, gw, producer, wait_for  # noqa: F401  (module fixtures)


def test_sql92_subscription_is_filtered_by_the_gateway(gw, producer, admin):
    admin.create_topic("SqlN", queues=2)
    col = Collector()
    c = PushConsumer("sql-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("SqlN", "a BETWEEN 3 AND 6 AND (color = 'red' OR color IS NULL)", expression_type="SQL92")
    c.register_listener(col)
    c.start()
    try:
        for i in range(10):
            props = {"a": str(i)}
            if i % 2:
                props["color"] = "red" if i != 5 else "blue"
            producer.send(Message("SqlN", b"s%d" % i, tags="T", properties=props))
        assert wait_for(lambda: len(col.msgs) >= 3)
        time.sleep(0.5)
        assert col.bodies() == [b"s3", b"s4", b"s6"]  # s5 is blue; the rest are out of range
    finally:
        c.shutdown()


def test_lite_pull_sql92_subscription(gw, producer, admin):
    admin.create_topic("SqlLiteN", queues=1)
    c = LitePullConsumer("sql-lite-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("SqlLiteN", "NOT (n < 2)", expression_type="SQL92")
    c.start()
    try:
        for i in range(4):
            producer.send(Message("SqlLiteN", b"n%d" % i, properties={"n": str(i)}))
        got = []
        assert wait_for(lambda: got.extend(c.poll(1.0)) or len(got) >= 2)
        assert sorted(m.body for m in got) == [b"n2", b"n3"]
    finally:
        c.shutdown()


def test_malformed_sql92_is_refused_at_start_with_the_reason(gw, admin):
    admin.create_topic("SqlBadN", queues=1)
    c = PushConsumer("sql-bad-g", gw.namesrv)
    c.subscribe("SqlBadN", "a > AND b = 1", expression_type="SQL92")
    c.register_listener(Collector())
    with pytest.raises(MQBrokerError) as info:
        c.start()
    assert info.value.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "a > AND b = 1" in str(info.value)
    c.shutdown()


def test_clustering_group_gets_its_retry_topic_and_running_info(gw, producer, admin):
    admin.create_topic("InfoN", queues=2)
    c = PushConsumer("info-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("InfoN", "X || Y")
    c.register_listener(Collector())
    c.start()
    try:
        assert "%RETRY%info-g" in admin.list_topics()
        assert wait_for(lambda: len([q for q in c.held_queues if q.topic == "InfoN"]) == 2)
        info = admin.consumer_running_info("info-g", c.client_id)
        assert info["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert {s["topic"]: s["subString"] for s in info["subscriptionSet"]}["InfoN"] == "X || Y"
        assert set(info["mqTable"]) >= {MessageQueue("InfoN", "broker-a", 0), MessageQueue("InfoN", "broker-a", 1)}
    finally:
        c.shutdown()
    with pytest.raises(MQBrokerError) as info:
        admin.consumer_running_info("info-g", "nobody@0")
    assert info.value.code == ResponseCode.CONSUMER_NOT_ONLINE


def test_dead_letter_resent_to_its_topic(gw, producer, admin):
    admin.create_topic("DlqN", queues=1)
    with dead_lettering("dlq-g", gw.namesrv, "DlqN") as got:
        sent = producer.send(Message("DlqN", b"dead", keys="k-dead"))
        assert wait_for(lambda: got)
        dlq = MessageQueue("%DLQ%dlq-g", "broker-a", 0)
        assert wait_for(lambda: admin.max_offset(dlq) == 1)
    lite = LitePullConsumer("dlq-reader", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    lite.start()
    try:
        lite.assign([dlq])
        dead = []
        assert wait_for(lambda: dead.extend(lite.poll(1.0)) or dead)
        before = admin.max_offset(MessageQueue("DlqN", "broker-a", 0))
        out = admin.resend_dead_letter(dead[0].offset_msg_id)
        assert out["topic"] == "DlqN" and out["queueOffset"] == before
        again = admin.view_message(out["msgId"])
        assert (again.body, again.msg_id, again.reconsume_times) == (b"dead", sent.msg_id, 0)
        with pytest.raises(MQBrokerError):  # not a dead letter
            admin.resend_dead_letter(out["msgId"])
    finally:
        lite.shutdown()
