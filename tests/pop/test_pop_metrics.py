"""POP consumption shows up in the fetch counters of /metrics (issue #16): a native SimpleConsumer's
POP answers count under protocol "remoting" and the topic it read, as pulls do; a topic nobody
popped stays at zero. (Kafka ShareFetch: tests/kafka/test_share_groups.py.)"""
from __future__ import annotations

from client import ConsumeFrom, Message, Producer, SimpleConsumer
from metrics_page import sample, scrape
from tests.gateway_process import free_port, wait_port

BODY = b"p" * 100


def test_pop_answers_count_as_fetches(gateway_factory):
    port = free_port()
    gw = gateway_factory(extra_args=["--http-port", str(port)])
    wait_port(port)
    http = f"127.0.0.1:{port}"
    with Producer("pop-metrics-p", gw.namesrv) as p:
        for _ in range(6):
            p.send(Message("PopMetrics", BODY))
        p.send(Message("PopMetricsIdle", BODY))
    assert sample(scrape(http), "rocketgate_fetches_total", protocol="remoting", topic="PopMetrics") == 0
    got = []
    with SimpleConsumer("pop-metrics-g", gw.namesrv, subscriptions={"PopMetrics": "*"}, await_duration=1,
                        consume_from=ConsumeFrom.FIRST_OFFSET) as c:
        for _ in range(20):
            got += c.receive(max_messages=32, invisible_duration=30)
            if len(got) >= 6:
                break
        for m in got:
            c.ack(m)
    assert len(got) == 6
    after = scrape(http)
    assert sample(after, "rocketgate_fetched_bytes_total", protocol="remoting", topic="PopMetrics") >= 6 * len(BODY)
    assert sample(after, "rocketgate_fetches_total", protocol="remoting", topic="PopMetrics") >= 1
    assert sample(after, "rocketgate_fetched_bytes_total", protocol="remoting", topic="PopMetricsIdle") == 0
    assert sample(after, "rocketgate_fetched_bytes_total", protocol="kafka", topic="PopMetrics") == 0
