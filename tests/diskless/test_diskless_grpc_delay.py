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

from client import Admin, MessageQueue
from test_diskless_delay import bucket_args, first_seen

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "grpc"))
from grpc_sdk import GrpcGateway, config, message  # noqa: E402

rocketmq = pytest.importorskip("rocketmq")
from rocketmq import Producer, TransactionChecker, TransactionResolution  # noqa: E402

REAL = os.environ.get("GRPC_TARGET") == "proxy"
pytestmark = pytest.mark.timeout(400 if REAL else 90)
TOPICS = {"gdl-delay": "DELAY", "gdl-tx": "TRANSACTION"}


@pytest.fixture
def target(request, tmp_path):
    """(gRPC endpoints, name servers to read through, queues of each topic)."""
    if REAL:
        from bench.grpc_proxy import RealProxy
        proxy = RealProxy(str(tmp_path / "proxy")).start()
        try:
            proxy.create_topics(TOPICS)
            yield proxy.endpoints, [f"127.0.0.1:{proxy.namesrv_port}"], 4
        finally:
            proxy.stop()
        return
    args, _keys = bucket_args(request)
    make = request.getfixturevalue("gateway_factory")
    a = GrpcGateway(str(tmp_path / "a"), extra_args=args).start()
    try:
        with Admin(a.namesrv) as admin:
            for topic in TOPICS:
                admin.create_topic(topic, queues=1, attributes={"diskless.enable": "true"})
        b = make(extra_args=args, name="b")  # its own data dir, the same bucket
        yield a.endpoints, [a.namesrv, b.namesrv], 1
    finally:
        a.stop()


class Checker(TransactionChecker):
    def __init__(self) -> None:
        self.checked = []

    def check(self, msg):  # the local transaction's outcome, as an application answers
        self.checked.append(msg.body)
        return TransactionResolution.ROLLBACK if msg.body == b"rolled-back" else TransactionResolution.COMMIT


def test_grpc_delay_and_transactions_on_diskless_topics(target):
    endpoints, readers, queues = target
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
