"""/metrics, /healthz and /readyz of a real gateway process (--http-port): traffic from librdkafka
and the native client moves the counters and gauges it should (requests, bytes, appends, lag,
delay depth, pending transaction halves); the Prometheus parser reads the whole page."""
from __future__ import annotations

import os
import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

import metrics_page
from codec.remoting.message import make_msg_id
from client import Admin, Message, Producer, TransactionProducer, TransactionState
from dead_letters import dead_lettering
from gateway_process import ROOT, GatewayProcess, free_port
from metrics_page import sample as value
import waiting


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    http_port = free_port()
    g = GatewayProcess(str(tmp_path_factory.mktemp("ops") / "data"),
                       extra_args=["--http-port", str(http_port), "--transaction-check-interval-ms", "600000"])
    g.http = f"127.0.0.1:{http_port}"
    g.start()
    yield g
    g.stop()


def get(gw, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://{gw.http}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def scrape(gw) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one /metrics page."""
    status, text = get(gw, "/metrics")
    assert status == 200
    return metrics_page.parse(text)


def total(samples, name: str, **labels) -> float:
    """The sum of every sample of `name` whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items()
               if n == name and all(dict(ls).get(k) == want for k, want in labels.items()))


def wait_for(pred, timeout=20.0):
    return waiting.until(pred, timeout, interval=0.1)


def test_health_endpoints(gw):
    assert get(gw, "/healthz") == (200, "ok\n")
    assert get(gw, "/readyz") == (200, "ready\n")
    samples = scrape(gw)
    assert value(samples, "rocketgate_ready") == 1
    assert value(samples, "process_resident_memory_bytes") > 0
    assert ("rocketgate_commitlog_files", ()) in samples  # 0 until the first write


def test_kafka_traffic_and_consumer_lag(gw):
    before = scrape(gw)
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "linger.ms": 0})
    for i in range(10):
        p.produce("metrics-k", key=b"k%d" % i, value=b"v%d" % i, partition=0)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "metrics-g",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(["metrics-k"])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 4 and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            got.append(m)
    assert len(got) >= 4
    c.commit(offsets=None, message=got[3], asynchronous=False)  # committed offset 4 of partition 0
    c.close()

    after = scrape(gw)
    assert value(after, "rocketgate_messages_appended_total", topic="metrics-k") == 10
    assert value(after, "rocketgate_consumer_lag_messages", group="metrics-g", topic="metrics-k", queue="0") == 6
    assert value(after, "rocketgate_consumer_committed_offset", group="metrics-g", topic="metrics-k", queue="0") == 4
    produced = value(after, "rocketgate_requests_total", protocol="kafka", request="Produce")
    assert produced >= 1 and produced > value(before, "rocketgate_requests_total", protocol="kafka", request="Produce")
    assert value(after, "rocketgate_requests_total", protocol="kafka", request="OffsetCommit") >= 1
    assert value(after, "rocketgate_request_duration_seconds_count", protocol="kafka", request="Fetch") >= 1
    assert value(after, "rocketgate_request_duration_seconds_bucket", protocol="kafka", request="Produce",
                  le="+Inf") == produced
    assert value(after, "rocketgate_received_bytes_total", protocol="kafka") > \
        value(before, "rocketgate_received_bytes_total", protocol="kafka") + 10 * 4
    assert value(after, "rocketgate_sent_bytes_total", protocol="kafka") > 0
    assert value(after, "rocketgate_connections_accepted_total", protocol="kafka") >= 2
    assert value(after, "rocketgate_store_write_duration_seconds_count") >= 1


def test_remoting_traffic_delay_depth_and_pending_halves(gw):
    with Admin(gw.namesrv) as admin:
        admin.create_topic("metrics-r", queues=1)
    now_ms = time.time() * 1000
    with Producer("metrics-pg", gw.namesrv) as p:
        for i in range(3):
            p.send(Message("metrics-r", b"later%d" % i, delay_level=18))  # 2 h
        p.send(Message("metrics-r", b"now"))
    with TransactionProducer("metrics-tx", gw.namesrv, local_transaction=lambda m, a: TransactionState.UNKNOWN,
                             check_listener=lambda m: TransactionState.UNKNOWN) as tp:
        tp.send_in_transaction(Message("metrics-r", b"undecided"))
        samples = scrape(gw)
        assert value(samples, "rocketgate_connections", protocol="remoting") >= 1
    assert value(samples, "rocketgate_delay_queue_depth_messages", level="18") == 3
    due = value(samples, "rocketgate_delay_queue_next_due_timestamp_seconds", level="18")
    assert now_ms / 1000 + 7000 < due < time.time() + 7300
    assert value(samples, "rocketgate_delay_queue_depth_messages", level="1") == 0
    assert value(samples, "rocketgate_transaction_pending_halves") == 1
    sends = total(samples, "rocketgate_requests_total", protocol="remoting", request="SEND_MESSAGE") + \
        total(samples, "rocketgate_requests_total", protocol="remoting", request="SEND_MESSAGE_V2")
    assert sends >= 5
    assert value(samples, "rocketgate_messages_appended_total", topic="SCHEDULE_TOPIC_XXXX") == 3
    assert value(samples, "rocketgate_messages_appended_total", topic="RMQ_SYS_TRANS_HALF_TOPIC") == 1
    assert value(samples, "rocketgate_received_bytes_total", protocol="remoting") > 0
    assert wait_for(lambda: value(scrape(gw), "rocketgate_connections", protocol="remoting") == 0)


def test_remoting_errors_are_counted_by_request_code(gw):
    before = total(scrape(gw), "rocketgate_request_errors_total", protocol="remoting")
    with Admin(gw.namesrv) as admin:
        with pytest.raises(Exception):
            admin.view_message(make_msg_id("127.0.0.1", gw.remoting_port, 1 << 40))  # no message there
    after = scrape(gw)
    assert value(after, "rocketgate_request_errors_total", protocol="remoting", request="VIEW_MESSAGE_BY_ID") >= 1
    assert total(after, "rocketgate_request_errors_total", protocol="remoting") == before + 1


def test_every_metric_is_documented_and_the_dashboard_uses_real_ones(gw):
    status, text = get(gw, "/metrics")
    families = list(text_string_to_metric_families(text))
    docs = open(os.path.join(ROOT, "docs", "metrics.md"), encoding="utf-8").read()
    for family in families:
        if family.name.startswith("rocketgate_"):
            name = family.name + "_total" if family.type == "counter" else family.name
            assert f"`{name}`" in docs, f"{name} is not in docs/metrics.md"
    exposed = {s.name for f in families for s in f.samples} | {f.name for f in families} | \
        {f.name + "_total" for f in families if f.type == "counter"} | \
        {f.name + suffix for f in families if f.type == "histogram" for suffix in ("_bucket", "_sum", "_count")}
    used = metrics_page.dashboard_metrics() - metrics_page.dashboard_metrics("rocketgate_tier_")  # with a tier: tests/tier
    assert used and used <= exposed, used - exposed


def test_dead_letters_and_retry_depth(gw):
    with Admin(gw.namesrv) as admin:
        admin.create_topic("metrics-dlq", queues=1)
    with dead_lettering("metrics-cg", gw.namesrv, "metrics-dlq"):
        with Producer("metrics-dlq-pg", gw.namesrv) as p:
            for i in range(2):
                p.send(Message("metrics-dlq", b"bad%d" % i))
        assert wait_for(lambda: value(scrape(gw), "rocketgate_dlq_messages", group="metrics-cg") == 2)
        samples = scrape(gw)
        assert ("rocketgate_retry_depth_messages", (("group", "metrics-cg"),)) in samples  # %RETRY% made at register
        assert value(samples, "rocketgate_rocketmq_clients", role="consumer") >= 1
