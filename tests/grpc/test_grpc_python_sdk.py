"""The stock Python SDK (rocketmq-python-client 5.1.x, gRPC) against the gateway's --grpc-port:
producer (normal, FIFO, delay, transactions with a checker), SimpleConsumer receive / ack /
change invisible duration, PushConsumer."""
from __future__ import annotations

import threading
import time

import pytest

from grpc_sdk import config, message, receive_all, start_target

rocketmq = pytest.importorskip("rocketmq")
pytestmark = pytest.mark.timeout(900)  # the module fixture may start a real proxy (GRPC_TARGET=proxy)
from rocketmq import (ConsumeResult, FilterExpression, MessageListener, Producer, PushConsumer,  # noqa: E402
                      SimpleConsumer, TransactionChecker, TransactionResolution)


TOPICS = {"py-normal": "NORMAL", "py-fifo": "FIFO", "py-fifo-hold": "FIFO", "py-delay": "DELAY",
          "py-invisible": "NORMAL", "py-tx": "TRANSACTION", "py-push": "NORMAL"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = start_target(str(tmp_path_factory.mktemp("grpc") / "data"), TOPICS,
                     ["py-fifo-g", "py-fifo-hold-g"])
    yield g
    g.stop()


class Clients:
    """Python SDK clients on the target, each shut down when the test ends (the `sdk` fixture)."""

    def __init__(self, endpoints: str) -> None:
        self.endpoints, self.opened = endpoints, []

    def start(self, client):
        client.startup()
        self.opened.append(client)
        return client

    def producer(self, topic: str, checker=None):
        return self.start(Producer(config(self.endpoints), (topic,), checker=checker))

    def pair(self, topic: str, expression: str = "*", await_s: int = 2, checker=None):
        """A producer of `topic` and a SimpleConsumer of it in group "<topic>-g"."""
        p = self.producer(topic, checker)
        c = self.start(SimpleConsumer(config(self.endpoints), f"{topic}-g", {topic: FilterExpression(expression)},
                                      await_duration=await_s))
        return p, c

    def close(self) -> None:
        for client in reversed(self.opened):
            client.shutdown()


@pytest.fixture
def sdk(gw):
    clients = Clients(gw.endpoints)
    yield clients
    clients.close()


def test_normal_send_receive_ack_with_tags_keys_properties(sdk):
    p, c = sdk.pair("py-normal", "TA")
    ids = [p.send(message("py-normal", f"m{i}".encode(), tag="TA" if i % 2 == 0 else "TB",
                          keys=[f"k{i}"], props={"n": str(i)})).message_id for i in range(10)]
    got = receive_all(c, 5)
    assert sorted(m.body for m in got) == [f"m{i}".encode() for i in range(0, 10, 2)]
    for m in got:
        n = int(m.properties["n"])
        assert m.tag == "TA" and m.keys == {f"k{n}"} and m.message_id == ids[n]
        assert m.topic == "py-normal" and m.delivery_attempt == 1
    assert c.receive(16, 30) == []  # acknowledged: nothing comes back


def test_fifo_message_group_is_received_in_order(sdk):
    p, c = sdk.pair("py-fifo")
    for i in range(20):
        p.send(message("py-fifo", f"{i}".encode(), group="order-1"))
    got = receive_all(c, 20)
    assert [int(m.body) for m in got] == list(range(20))
    assert all(m.message_group == "order-1" for m in got)


def test_fifo_queue_is_held_while_a_message_is_in_flight(sdk):
    p, c = sdk.pair("py-fifo-hold", await_s=1)
    p.send(message("py-fifo-hold", b"first", group="g"))
    first = receive_all(c, 1, ack=False)
    p.send(message("py-fifo-hold", b"second", group="g"))
    assert c.receive(16, 30) == []  # "first" is in flight: its group waits
    c.ack(first[0])
    assert [m.body for m in receive_all(c, 1)] == [b"second"]


def test_delay_by_delivery_timestamp(sdk):
    # rocketmq-python-client 5.1.2 writes Message.delivery_timestamp into Timestamp.seconds as it
    # is, so a value in epoch seconds gives the right delivery time (one in ms is far ahead).
    p, c = sdk.pair("py-delay", await_s=1)
    due_s = int(time.time()) + 3
    p.send(message("py-delay", b"later", deliver_at=due_s))
    got = receive_all(c, 1, timeout=20)
    assert [m.body for m in got] == [b"later"]
    assert time.time() >= due_s
    assert got[0].delivery_timestamp == due_s * 1000
    # Refused (ours: ILLEGAL_DELIVERY_TIME; the RocketMQ 5.5 proxy: 50001, an invalid Timestamp).
    with pytest.raises(Exception, match="40012|50001"):
        p.send(message("py-delay", b"too-late", deliver_at=int(time.time() * 1000)))


def test_change_invisible_duration_and_redelivery(sdk):
    p, c = sdk.pair("py-invisible", await_s=1)
    p.send(message("py-invisible", b"x"))
    p.send(message("py-invisible", b"y"))
    got = {m.body: m for m in receive_all(c, 2, invisible=10, ack=False)}
    c.change_invisible_duration(got[b"x"], 60)  # x stays invisible; y comes back after 10 s (the least)
    again = receive_all(c, 1, invisible=30, timeout=25)
    assert [m.body for m in again] == [b"y"]
    assert again[0].delivery_attempt == 2
    time.sleep(1)
    assert c.receive(16, 30) == []
    c.ack(got[b"x"])  # the receipt is still valid after the change


class Checker(TransactionChecker):
    def __init__(self) -> None:
        self.checked = []

    def check(self, message):
        self.checked.append(message.body)
        return TransactionResolution.COMMIT


def test_transactions_commit_rollback_and_check_back(sdk):
    checker = Checker()
    p, c = sdk.pair("py-tx", await_s=1, checker=checker)
    t = p.begin_transaction()
    p.send(message("py-tx", b"committed"), t)
    assert c.receive(16, 30) == []  # a half message is invisible
    t.commit()
    t = p.begin_transaction()
    p.send(message("py-tx", b"rolled-back"), t)
    t.rollback()
    p.begin_transaction()  # a transaction nobody ends: the check-back asks the checker
    orphan = p.begin_transaction()
    p.send(message("py-tx", b"checked"), orphan)
    got = receive_all(c, 2, timeout=30)
    assert sorted(m.body for m in got) == [b"checked", b"committed"]
    assert checker.checked == [b"checked"]
    assert c.receive(16, 30) == []


class Listener(MessageListener):
    def __init__(self, want: int) -> None:
        self.bodies, self.want, self.done = [], want, threading.Event()
        self.failed_once = set()

    def consume(self, message):
        if message.body == b"retry-me" and message.body not in self.failed_once:
            self.failed_once.add(message.body)
            return ConsumeResult.FAILURE
        self.bodies.append(message.body)
        if len(self.bodies) >= self.want:
            self.done.set()
        return ConsumeResult.SUCCESS


def test_push_consumer(sdk):
    p = sdk.producer("py-push")
    listener = Listener(6)
    sdk.start(PushConsumer(config(sdk.endpoints), "py-push-g", listener, {"py-push": FilterExpression("*")}))
    for i in range(5):
        p.send(message("py-push", f"p{i}".encode()))
    p.send(message("py-push", b"retry-me"))
    assert listener.done.wait(60), listener.bodies
    assert sorted(listener.bodies) == sorted([f"p{i}".encode() for i in range(5)] + [b"retry-me"])
