"""RocketMQ 5 gRPC (the stock Python SDK) delay and transactional messages on diskless topics: a
message with a delivery time reaches the diskless queue only when due; a committed transaction's
message lands, a rolled-back one never does, an unended one is checked back and committed -- read
from the diskless queues with remoting pulls, on the gateway that took the sends and on a second one
sharing the bucket. GRPC_TARGET=proxy runs the same on RocketMQ 5.5's proxy with plain topics."""
from __future__ import annotations

import os
import sys
import time

import pytest

import waiting
from client import Admin, MessageQueue
from test_diskless_delay import bucket_args, first_seen

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "grpc"))
from grpc_sdk import GrpcGateway, config, message, receive_all  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import (FilterExpression, Producer, SimpleConsumer, TransactionChecker,  # noqa: E402
                      TransactionResolution)

REAL = os.environ.get("GRPC_TARGET") == "proxy"
pytestmark = pytest.mark.timeout(400 if REAL else 90)
TOPICS = {"gdl-delay": "DELAY", "gdl-tx": "TRANSACTION", "gdl-normal": "NORMAL"}


@pytest.fixture
def target(request, tmp_path):
    """(gRPC endpoints, name servers to read through, queues of each topic, gRPC endpoints to receive from)."""
    if REAL:
        from bench.grpc_proxy import RealProxy
        proxy = RealProxy(str(tmp_path / "proxy")).start()
        try:
            proxy.create_topics(TOPICS)
            yield proxy.endpoints, [f"127.0.0.1:{proxy.namesrv_port}"], 4, proxy.endpoints
        finally:
            proxy.stop()
        return
    args, _keys = bucket_args(request)
    a = GrpcGateway(str(tmp_path / "a"), extra_args=args).start()
    try:
        with Admin(a.namesrv) as admin:
            for topic in TOPICS:
                admin.create_topic(topic, queues=1, attributes={"diskless.enable": "true"})
        b = GrpcGateway(str(tmp_path / "b"), extra_args=args).start()  # its own data dir, the same bucket
        try:
            with Admin(b.namesrv) as admin:  # adopted from the bucket (a 2 s watch)
                assert waiting.until(lambda: set(TOPICS) <= set(admin.list_topics()), 20, 0.2)
            yield a.endpoints, [a.namesrv, b.namesrv], 1, b.endpoints
        finally:
            b.stop()
    finally:
        a.stop()


class Checker(TransactionChecker):
    def __init__(self) -> None:
        self.checked = []

    def check(self, msg):  # the local transaction's outcome, as an application answers
        self.checked.append(msg.body)
        return TransactionResolution.ROLLBACK if msg.body == b"rolled-back" else TransactionResolution.COMMIT


def test_grpc_delay_and_transactions_on_diskless_topics(target):
    endpoints, readers, queues, _receiver = target
    checker = Checker()
    p = Producer(config(endpoints), tuple(TOPICS), checker=checker)
    p.startup()
    try:
        # rocketmq-python-client 5.1.2 puts delivery_timestamp into Timestamp.seconds as it is
        due_s = int(time.time()) + 3
        p.send(message("gdl-delay", b"later", deliver_at=due_s))
        t = p.begin_transaction()
        p.send(message("gdl-tx", b"committed"), t)
        t.commit()
        t = p.begin_transaction()
        p.send(message("gdl-tx", b"rolled-back"), t)
        t.rollback()
        orphan = p.begin_transaction()  # nobody ends it: the check-back asks the checker
        p.send(message("gdl-tx", b"checked"), orphan)
        for namesrv in readers:
            tx, delayed = [], {}
            for qid in range(queues):  # the producer stays up while the check-back may come
                delayed.update(first_seen(namesrv, MessageQueue("gdl-delay", "broker-a", qid), 1, timeout=30 / queues))
                first_seen(namesrv, MessageQueue("gdl-tx", "broker-a", qid), 2, timeout=30 / queues, pulled=tx)
            assert list(delayed) == [b"later"] and delayed[b"later"][1] >= due_s
            assert {body for body, _off in tx} == {b"committed", b"checked"}
    finally:
        p.shutdown()
    assert b"checked" in checker.checked


def test_grpc_receive_ack_change_invisible_and_redelivery_on_a_diskless_topic(target):
    """SimpleConsumer (ReceiveMessage = POP) on the gateway that did not write the topic."""
    endpoints, _readers, _queues, receiver = target
    c = SimpleConsumer(config(receiver), "gdl-normal-g", {"gdl-normal": FilterExpression("*")}, await_duration=2)
    c.startup()  # first: its settings reach the server while the producer works (the 5.5 proxy needs them)
    try:
        p = Producer(config(endpoints), ("gdl-normal",))
        p.startup()
        try:
            for i in range(3):
                p.send(message("gdl-normal", b"m%d" % i))
        finally:
            p.shutdown()
        first = {m.body: m for m in receive_all(c, 3, invisible=10, ack=False)}
        assert sorted(first) == [b"m0", b"m1", b"m2"]
        assert all(m.delivery_attempt == 1 for m in first.values())
        c.ack(first[b"m0"])
        c.change_invisible_duration(first[b"m1"], 60)  # m1 stays away; m2 comes back after 10 s
        again = receive_all(c, 1, invisible=30, timeout=40)
        assert [(m.body, m.delivery_attempt) for m in again] == [(b"m2", 2)]
        c.ack(first[b"m1"])  # the receipt is still valid after the change
        assert c.receive(16, 30) == []
    finally:
        c.shutdown()
