"""Lite topics (RIP-83) and priority messages (RIP-80) through the stock Python SDK
rocketmq-python-client 5.1.2: a Producer sends with `lite_topic` to a LITE parent topic, a
LitePushConsumer (its group bound to the parent by `lite.bind.topic`) receives only the lite topics
it subscribed, in send order, and a lite topic subscribed at run time; the SDK's LiteSimpleConsumer
(ClientType LITE_SIMPLE_CONSUMER) is refused as RocketMQ 5.5.0 refuses it; priority messages on a
PRIORITY topic come to a SimpleConsumer highest first. Apache RocketMQ 5.5.0's proxy
(GRPC_TARGET=proxy) gave exactly these results."""
from __future__ import annotations

import threading
import time

import pytest

from grpc_sdk import config, receive_all
from lite_target import start

rocketmq = pytest.importorskip("rocketmq")
pytestmark = pytest.mark.timeout(900)  # the module fixture may start Apache RocketMQ (GRPC_TARGET=proxy)
from rocketmq import (ConsumeResult, FilterExpression, LitePushConsumer, LiteSimpleConsumer, Message,  # noqa: E402
                      MessageListener, Producer, SimpleConsumer)
from rocketmq.v5.exception import LiteSubscriptionQuotaExceededException  # noqa: E402

LITE, PRIORITY = "pyl-lite", "pyl-priority"


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    t = start(str(tmp_path_factory.mktemp("grpc-pylite")), {LITE: "LITE", PRIORITY: "PRIORITY"},
              {f"{LITE}-g": LITE, f"{LITE}-simple-g": LITE})
    yield t
    t.stop()


@pytest.fixture
def clients(target):
    """Start SDK clients on the target (`clients(client)`); all shut down when the test ends."""
    opened = []

    def open_client(client):
        client.startup()
        opened.append(client)
        return client
    yield open_client
    for client in reversed(opened):
        client.shutdown()


def _settled(client, seconds: float = 10) -> bool:
    """Whether the server's Settings came: the SDK 5.1.2 starts a simple consumer without waiting for
    them (a push consumer it does not), and until they come 5.5's proxy answers its ReceiveMessage
    with an internal error ("settings" is null)."""
    return client._init_settings_event.wait(seconds)


def _message(topic: str, body: str, lite_topic: str | None = None, priority: int | None = None) -> Message:
    m = Message()
    m.topic, m.body = topic, body.encode()
    if lite_topic is not None:
        m.lite_topic = lite_topic
    if priority is not None:
        m.priority = priority
    return m


class Collect(MessageListener):
    """Every message's (lite topic, body) in arrival order."""

    def __init__(self) -> None:
        self.seen, self.lock = [], threading.Lock()

    def consume(self, message):
        with self.lock:
            self.seen.append((message.lite_topic, message.body.decode()))
        return ConsumeResult.SUCCESS

    def wait_for(self, count: int, seconds: float = 30) -> list:
        """What came once `count` messages did (or `seconds` passed), and 2 s more: nothing else comes."""
        deadline = time.monotonic() + seconds
        while len(self.seen) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)
        with self.lock:
            seen, self.seen = self.seen, []
        return seen


def test_lite_push_consumer_receives_its_lite_topics_in_order(target, clients):
    listener = Collect()
    c = clients(LitePushConsumer(config(target.endpoints), f"{LITE}-g", LITE, listener))
    c.subscribe_lite("a")
    p = clients(Producer(config(target.endpoints), (LITE,)))
    for i in range(5):
        for lite in ("a", "b"):
            p.send(_message(LITE, f"{lite}-{i}", lite_topic=lite))
    assert listener.wait_for(5) == [("a", f"a-{i}") for i in range(5)]

    c.subscribe_lite("b")  # at run time: b from its first message (the group has no progress on it)
    for i in range(5, 8):
        for lite in ("a", "b"):
            p.send(_message(LITE, f"{lite}-{i}", lite_topic=lite))
    later = listener.wait_for(11)
    assert [body for lite, body in later if lite == "a"] == [f"a-{i}" for i in range(5, 8)]
    assert [body for lite, body in later if lite == "b"] == [f"b-{i}" for i in range(8)]
    assert all(body.startswith(lite) for lite, body in later)


def test_lite_simple_consumer_is_refused_as_rocketmq_55_refuses_it(target, clients):
    """5.5.0's proxy ends the LITE_SIMPLE_CONSUMER's Telemetry stream ("Client type is not consumer"):
    no Settings, so the SDK's lite quota stays 0 and it refuses every subscribe_lite."""
    c = clients(LiteSimpleConsumer(LITE, config(target.endpoints), f"{LITE}-simple-g", await_duration=2))
    assert not _settled(c, 3)
    with pytest.raises(LiteSubscriptionQuotaExceededException):
        c.subscribe_lite("a")


def test_priority_messages_come_highest_first(target, clients):
    p = clients(Producer(config(target.endpoints), (PRIORITY,)))
    for round_ in range(2):
        for prio in range(4):
            p.send(_message(PRIORITY, f"p{prio}-{round_}", priority=prio))
    c = clients(SimpleConsumer(config(target.endpoints), f"{PRIORITY}-g", {PRIORITY: FilterExpression("*")},
                               await_duration=2))
    assert _settled(c)
    got = receive_all(c, 8)
    assert [m.body.decode() for m in got] == ["p3-0", "p3-1", "p2-0", "p2-1", "p1-0", "p1-1", "p0-0", "p0-1"]
    assert [m.priority for m in got] == [3, 3, 2, 2, 1, 1, 0, 0]
