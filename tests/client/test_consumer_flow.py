"""Consumer flow control in the native client (client/flow.py, PushConsumer) and the commit of
LitePullConsumer(auto_commit=True) at shutdown, against a real gateway."""
import logging
import threading
import time
import types

import pytest

from client import Admin, ConsumeFrom, ConsumeStatus, LitePullConsumer, Message, Producer, PushConsumer
from client.flow import FlowLimits, ProcessQueue, over_limit
from gateway_process import GatewayProcess
import waiting


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = GatewayProcess(str(tmp_path_factory.mktemp("flow-gw") / "data")).start()
    yield g
    g.stop()


def wait_for(pred, timeout=30.0):
    return waiting.until(pred, timeout, interval=0.05)


def msg(offset, size=10):
    """What ProcessQueue reads of a message: its queue offset and body."""
    return types.SimpleNamespace(body=b"x" * size, queue_offset=offset)


def test_limits_count_size_and_span():
    limits = FlowLimits(pull_threshold_for_queue=3, pull_threshold_size_for_queue=1, consume_concurrently_max_span=50)
    pq = ProcessQueue(0)
    pq.put([msg(0), msg(1), msg(2)], 3)
    assert over_limit(pq, limits, orderly=False) is None
    pq.put([msg(3)], 4)
    assert "cached message count exceeds the threshold 3" in over_limit(pq, limits, orderly=False)
    pq = ProcessQueue(0)
    pq.put([msg(0, 600_000), msg(1, 600_000)], 2)
    assert "cached message size exceeds the threshold 1 MiB" in over_limit(pq, limits, orderly=False)
    pq = ProcessQueue(0)
    pq.put([msg(0), msg(100)], 101)  # offsets between were filtered out by tag
    assert "span too long" in over_limit(pq, limits, orderly=False)
    assert over_limit(pq, limits, orderly=True) is None  # orderly consumers do not check the span
    assert pq.remove([msg(0)]) == 100 and pq.remove([msg(100)]) == 101  # commit = lowest cached


def test_defaults_are_the_java_clients():
    assert FlowLimits() == FlowLimits(1000, 100, 2000, 0.05)


def test_push_consumer_stops_pulling_at_the_threshold(gw, caplog):
    """A blocked listener: the cache holds at most threshold + one pull batch, one warning is
    logged for the stretch, and once the listener runs again everything arrives, in order."""
    topic, n = "FlowCount", 60
    with Admin(gw.namesrv) as a:
        a.create_topic(topic, queues=1)
    with Producer("flow-pg", gw.namesrv) as p:
        for i in range(n):
            p.send(Message(topic, b"m%03d" % i))
    gate, got = threading.Event(), []

    def listener(msgs):
        gate.wait(60)
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer("flow-cg", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, pull_batch_size=4,
                     pull_threshold_for_queue=5)
    c.subscribe(topic, "*")
    c.register_listener(listener)
    caplog.set_level(logging.WARNING, logger="rocketgate.client")
    c.start()
    try:
        impl = c._impl
        assert wait_for(lambda: any(pq.count > 5 for pq in impl.cache.values()))
        time.sleep(1.0)  # many 50 ms rounds of flow control
        counts = [pq.count for mq, pq in impl.cache.items() if mq.topic == topic]
        assert counts and 5 < counts[0] <= 5 + 4, counts
        warnings = [r for r in caplog.records if "so do flow control" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        gate.set()
        assert wait_for(lambda: len(got) == n)
        assert got == [b"m%03d" % i for i in range(n)]
    finally:
        gate.set()
        c.shutdown()
    with Admin(gw.namesrv) as a:
        assert sum(r["consumerOffset"] for mq, r in a.consumer_progress("flow-cg", topic).items()) == n


def test_lite_pull_auto_commit_commits_the_last_poll_at_shutdown(gw):
    topic = "FlowLite"
    with Admin(gw.namesrv) as a:
        a.create_topic(topic, queues=1)
    with Producer("flow-lite-pg", gw.namesrv) as p:
        for i in range(5):
            p.send(Message(topic, b"l%d" % i))
    # A long commit interval: only the shutdown can have committed.
    c = LitePullConsumer("flow-lite-cg", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, persist_interval=3600)
    c.subscribe(topic, "*")
    c.start()
    polled = []
    try:
        assert wait_for(lambda: polled.extend(c.poll(1.0)) or len(polled) >= 5)
    finally:
        c.shutdown()
    with Admin(gw.namesrv) as a:
        assert sum(r["consumerOffset"] for mq, r in a.consumer_progress("flow-lite-cg", topic).items()) == 5
