"""The native Python client (client/) against a real gateway process."""
import os
import threading
import time

import pytest

from client import (JSON, ROCKETMQ, Admin, ConsumeFrom, ConsumeStatus, LitePullConsumer, Message, MessageModel,
                    MessageQueue, MQBrokerError, MQClientError, Producer, PushConsumer, SendStatus, allocate_averagely)
from client.producer import LatencyFaultTolerance
from client.instance import TopicRoute
from gateway_process import GatewayProcess, free_port
import waiting


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    """One gateway for the module: the tests only add their own topics and groups."""
    g = GatewayProcess(str(tmp_path_factory.mktemp("client-gw") / "data")).start()
    yield g
    g.stop()


def wait_for(pred, timeout=20.0):
    return waiting.until(pred, timeout, interval=0.05)


class Collector:
    """A listener that records what it gets (thread-safe: listeners run in worker threads)."""

    def __init__(self, status=ConsumeStatus.CONSUME_SUCCESS):
        self.msgs = []
        self.lock = threading.Lock()
        self.status = status

    def __call__(self, msgs):
        with self.lock:
            self.msgs.extend(msgs)
        return self.status

    def bodies(self):
        with self.lock:
            return sorted(m.body for m in self.msgs)


@pytest.fixture(scope="module")
def producer(gw):
    p = Producer("pg-native", gw.namesrv).start()
    yield p
    p.shutdown()


@pytest.fixture(scope="module")
def admin(gw):
    a = Admin(gw.namesrv).start()
    yield a
    a.shutdown()


@pytest.mark.parametrize("stype", [JSON, ROCKETMQ])
def test_send_modes_and_message_fields(gw, admin, stype):
    topic = f"SendModes{stype}"
    with Producer("pg-modes", gw.namesrv, serialize_type=stype) as p:
        r = p.send(Message(topic, b"sync", tags="TagA", keys=["k1", "k2"], properties={"color": "red"}))
        assert r.status == SendStatus.SEND_OK and r.queue.topic == topic and r.queue_offset == 0
        fut = p.send_async(Message(topic, b"async", keys="ka"))
        assert fut.result(10).status == SendStatus.SEND_OK
        done = []
        p.send_async(Message(topic, b"cb"), callback=lambda f: done.append(f.result())).result(10)
        assert wait_for(lambda: done)
        p.send_oneway(Message(topic, b"oneway", keys="kone"))
        big = bytes(range(256)) * 40  # > 4 KiB: sent compressed, read back inflated
        rb = p.send(Message(topic, big, keys="kbig"))
        assert wait_for(lambda: admin.query_by_key(topic, "kone"))
    m = admin.view_message(r.offset_msg_id)  # VIEW_MESSAGE_BY_ID at the address inside the msgId
    assert (m.body, m.tags, m.keys, m.properties["color"], m.msg_id) == (b"sync", "TagA", ["k1", "k2"], "red", r.msg_id)
    assert admin.view_message(rb.offset_msg_id).body == big
    assert [x.body for x in admin.query_by_key(topic, "k2")] == [b"sync"]
    with pytest.raises(MQBrokerError) as err:
        admin.query_by_key(topic, "missing")
    assert err.value.code == 208


def test_batch_and_selector_ordered_send(gw, producer, admin):
    r = producer.send_batch([Message("BatchN", b"b%d" % i, tags="T") for i in range(5)])
    assert len(r.msg_id.split(",")) == 5 and len(r.offset_msg_id.split(",")) == 5
    assert admin.view_message(r.offset_msg_id.split(",")[3]).body == b"b3"
    select = lambda queues, msg, arg: queues[arg % len(queues)]
    results = [producer.send(Message("OrderN", b"o%d" % i), selector=select, arg=7) for i in range(6)]
    assert {x.queue.queue_id for x in results} == {7 % 4}
    assert [x.queue_offset for x in results] == list(range(6))


def test_broker_errors_carry_code_and_remark(gw, producer, admin):
    admin.create_topic("ReadOnlyN", queues=2, perm=4)  # readable, not writable
    with pytest.raises(MQClientError, match="No route info"):
        producer.send(Message("ReadOnlyN", b"x"))  # no writable queue in the route
    q = MessageQueue("ReadOnlyN", "broker-a", 0)
    with pytest.raises(MQBrokerError) as err:
        producer.send(Message("ReadOnlyN", b"x"), queue=q)
    assert err.value.code == 16 and "forbidden" in err.value.remark
    with pytest.raises(MQBrokerError) as err:
        # random bytes stay over 4 MiB after the client's zlib compression
        producer.send(Message("BigN", os.urandom(4 * 1024 * 1024 + 10)), queue=MessageQueue("BigN", "broker-a", 0))
    assert err.value.code == 13


def test_fault_avoidance_and_allocation():
    lft = LatencyFaultTolerance()
    lft.update("b1", 20, False)
    assert lft.available("b1")
    lft.update("b1", 600, False)  # >= 550 ms: 30 s out
    assert not lft.available("b1")
    lft.update("b2", 0, True)  # a failure isolates for 30 s of latency → 180 s... still out
    assert not lft.available("b2")
    mqs = [MessageQueue("T", "b", q) for q in range(5)]
    a = allocate_averagely(mqs, ["c1", "c2"], "c1")
    b = allocate_averagely(mqs, ["c2", "c1"], "c2")
    assert [m.queue_id for m in a] == [0, 1, 2] and [m.queue_id for m in b] == [3, 4]
    assert allocate_averagely(mqs, ["c1"], "zz") == []


def test_retry_on_another_queue_and_fault_avoidance(gw, admin):
    """A route naming a second, unreachable broker: sends that pick it fail over to the live
    broker's queues, and with fault avoidance the dead broker is then left alone."""
    admin.create_topic("FailoverN", queues=2)
    dead = f"127.0.0.1:{free_port()}"
    with Producer("pg-retry", gw.namesrv, latency_fault_enable=True) as p:
        impl = p._impl

        def two_brokers():
            qd = {"perm": 6, "readQueueNums": 2, "writeQueueNums": 2, "topicSysFlag": 0}
            impl.instance.routes["FailoverN"] = TopicRoute("FailoverN", {"broker-a": gw.namesrv, "broker-dead": dead},
                                                           [{**qd, "brokerName": "broker-dead"},
                                                            {**qd, "brokerName": "broker-a"}])
            impl.instance.brokers.update({"broker-a": gw.namesrv, "broker-dead": dead})
        p._loop.run_sync(two_brokers)
        results = [p.send(Message("FailoverN", b"f%d" % i)) for i in range(6)]
        assert {r.queue.broker_name for r in results} == {"broker-a"}
        assert not impl.faults.available("broker-dead") and impl.faults.available("broker-a")
        with pytest.raises(MQClientError):  # a fixed queue is not retried elsewhere
            p.send(Message("FailoverN", b"x"), queue=MessageQueue("FailoverN", "broker-dead", 0))
    assert admin.max_offset(MessageQueue("FailoverN", "broker-a", 0)) + \
        admin.max_offset(MessageQueue("FailoverN", "broker-a", 1)) == 6


def test_two_consumers_in_one_group_share_queues(gw, producer, admin):
    admin.create_topic("ShareN", queues=4)
    c1, c2 = Collector(), Collector()
    a = PushConsumer("share-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    b = PushConsumer("share-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    for c, col in ((a, c1), (b, c2)):
        c.subscribe("ShareN", "*")
        c.register_listener(col)
        c.start()
    try:
        assert wait_for(lambda: len(a.held_queues) + len(b.held_queues) == 5 and a.held_queues and b.held_queues)
        held_a = {q for q in a.held_queues if q.topic == "ShareN"}
        held_b = {q for q in b.held_queues if q.topic == "ShareN"}
        assert not held_a & held_b and len(held_a | held_b) == 4 and len(held_a) == len(held_b) == 2
        sent = [producer.send(Message("ShareN", b"s%02d" % i)) for i in range(20)]
        assert wait_for(lambda: len(c1.msgs) + len(c2.msgs) >= 20)
        assert sorted(c1.bodies() + c2.bodies()) == [b"s%02d" % i for i in range(20)]
        assert {m.queue.queue_id for m in c1.msgs} <= {q.queue_id for q in held_a}
        assert {s.msg_id for s in sent} == {m.msg_id for m in c1.msgs + c2.msgs}
        b.shutdown()  # a is told (NOTIFY_CONSUMER_IDS_CHANGED) and takes b's queues at b's offsets
        assert wait_for(lambda: len([q for q in a.held_queues if q.topic == "ShareN"]) == 4)
        for i in range(20, 28):
            producer.send(Message("ShareN", b"s%02d" % i))
        assert wait_for(lambda: len(c1.msgs) + len(c2.msgs) >= 28)
        time.sleep(0.5)
        assert sorted(c1.bodies() + c2.bodies()) == [b"s%02d" % i for i in range(28)]  # nothing twice
    finally:
        a.shutdown()
        b.shutdown()
    progress = admin.consumer_progress("share-g", "ShareN")
    assert sum(v["consumerOffset"] for v in progress.values()) == 28
    assert all(v["consumerOffset"] == v["brokerOffset"] for v in progress.values())


def test_tag_subscription_and_broadcasting(gw, producer, admin):
    admin.create_topic("TagN", queues=2)
    cols = [Collector(), Collector()]
    consumers = []
    for col in cols:
        c = PushConsumer("bc-g", gw.namesrv, model=MessageModel.BROADCASTING, consume_from=ConsumeFrom.FIRST_OFFSET,
                         serialize_type=ROCKETMQ)
        c.subscribe("TagN", "A || B")
        c.register_listener(col)
        c.start()
        consumers.append(c)
    try:
        for i, tag in enumerate(["A", "B", "C", None, "A"]):
            producer.send(Message("TagN", b"%s%d" % ((tag or "-").encode(), i), tags=tag))
        for col in cols:  # every member gets every matching message
            assert wait_for(lambda: len(col.msgs) >= 3)
        time.sleep(0.5)
        for col in cols:
            assert col.bodies() == [b"A0", b"A4", b"B1"]
    finally:
        for c in consumers:
            c.shutdown()


def test_committed_offsets_resume_after_restart_of_consumer(gw, producer, admin):
    admin.create_topic("ResumeN", queues=1)
    for i in range(3):
        producer.send(Message("ResumeN", b"first%d" % i))
    col = Collector()
    c = PushConsumer("resume-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("ResumeN")
    c.register_listener(col)
    c.start()
    assert wait_for(lambda: len(col.msgs) == 3)
    c.shutdown()  # commits its offsets to the broker
    producer.send(Message("ResumeN", b"later"))
    col2 = Collector()
    c = PushConsumer("resume-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("ResumeN")
    c.register_listener(col2)
    c.start()
    try:
        assert wait_for(lambda: col2.msgs)
        time.sleep(0.3)
        assert col2.bodies() == [b"later"]
    finally:
        c.shutdown()


def test_orderly_consumer_gets_each_queue_in_order(gw, producer, admin):
    admin.create_topic("OrderlyN", queues=2)
    seen = []
    calls = []

    def listener(msgs):
        calls.append(1)
        if len(calls) == 2:  # the second batch is suspended once and then redelivered in order
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        seen.extend((m.queue_id, m.body) for m in msgs)
        return ConsumeStatus.SUCCESS

    c = PushConsumer("orderly-g", gw.namesrv, orderly=True, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("OrderlyN")
    c.register_listener(listener)
    c.start()
    try:
        select = lambda queues, msg, arg: queues[arg]
        for i in range(10):
            producer.send(Message("OrderlyN", b"%02d" % i), selector=select, arg=i % 2)
        assert wait_for(lambda: len(seen) == 10)
        for q in (0, 1):
            bodies = [b for qid, b in seen if qid == q]
            assert bodies == sorted(bodies) and len(bodies) == 5
    finally:
        c.shutdown()


def test_reconsume_later_redelivers_through_retry_topic(gw, producer, admin):
    admin.create_topic("RetryConsumeN", queues=1)
    got = []

    def listener(msgs):
        got.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER if len(got) == 1 else ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer("retry-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("RetryConsumeN")
    c.register_listener(listener)
    c.start()
    try:
        sent = producer.send(Message("RetryConsumeN", b"again"))
        assert wait_for(lambda: len(got) >= 2, timeout=40)  # level 3 = 10 s
        assert [m.msg_id for m in got[:2]] == [sent.msg_id, sent.msg_id]
        assert got[1].reconsume_times == 1 and got[1].topic == "RetryConsumeN"
    finally:
        c.shutdown()


def test_lite_pull_assign_seek_commit(gw, producer, admin):
    admin.create_topic("LiteN", queues=2)
    for i in range(6):
        producer.send(Message("LiteN", b"l%d" % i), queue=MessageQueue("LiteN", "broker-a", i % 2))
    c = LitePullConsumer("lite-g", gw.namesrv, auto_commit=False, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    try:
        queues = c.fetch_queues("LiteN")
        assert [q.queue_id for q in queues] == [0, 1]
        c.assign(queues)
        got = []
        assert wait_for(lambda: got.extend(c.poll(1.0)) or len(got) >= 6)
        assert sorted(m.body for m in got) == [b"l%d" % i for i in range(6)]
        q0 = queues[0]
        c.seek(q0, 1)
        again = []
        assert wait_for(lambda: again.extend(c.poll(1.0)) or len(again) >= 2)
        assert [m.body for m in again] == [b"l2", b"l4"]
        c.commit()
        assert c.committed(q0) == 3
        assert c.committed(queues[1]) == 3
    finally:
        c.shutdown()
    progress = admin.consumer_progress("lite-g")
    assert progress[MessageQueue("LiteN", "broker-a", 0)]["consumerOffset"] == 3


def test_lite_pull_subscribe_balances_and_polls(gw, producer, admin):
    admin.create_topic("LiteSubN", queues=2)
    c = LitePullConsumer("litesub-g", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    c.subscribe("LiteSubN", "X")
    c.start()
    try:
        producer.send(Message("LiteSubN", b"no", tags="Y"))
        producer.send(Message("LiteSubN", b"yes", tags="X"))
        got = []
        assert wait_for(lambda: got.extend(c.poll(1.0)) or got)
        assert [m.body for m in got] == [b"yes"]
        assert len(c.held_queues) == 2
    finally:
        c.shutdown()


def test_admin_topics_and_min_max_offsets(gw, producer, admin):
    admin.create_topic("AdminN", queues=3)
    assert "AdminN" in admin.list_topics()
    assert admin.topic_config()["AdminN"]["writeQueueNums"] == 3
    before = int(time.time() * 1000) - 1
    producer.send(Message("AdminN", b"x"), queue=MessageQueue("AdminN", "broker-a", 1))
    q = MessageQueue("AdminN", "broker-a", 1)
    assert (admin.min_offset(q), admin.max_offset(q)) == (0, 1)
    assert admin.search_offset(q, before) == 0
    assert admin.topic_stats("AdminN")[q]["maxOffset"] == 1
    admin.delete_topic("AdminN")
    assert "AdminN" not in admin.list_topics()


def test_clients_survive_a_gateway_restart(gateway):
    col = Collector()
    with Producer("restart-pg", gateway.namesrv) as p:
        c = PushConsumer("restart-g", gateway.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
        c.subscribe("RestartN")
        c.register_listener(col)
        c.start()
        try:
            p.send(Message("RestartN", b"before"))
            assert wait_for(lambda: col.msgs)
            gateway.restart()  # same ports and data: connections break, clients reconnect
            assert wait_for(lambda: _try_send(p, Message("RestartN", b"after")), timeout=30)
            assert wait_for(lambda: len(col.msgs) >= 2, timeout=30)
        finally:
            c.shutdown()
    assert col.bodies() == [b"after", b"before"]


def _try_send(p, msg) -> bool:
    try:
        return p.send(msg).status == SendStatus.SEND_OK
    except MQClientError:
        return False
