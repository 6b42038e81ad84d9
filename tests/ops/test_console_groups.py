"""Consumer groups of every kind on the console, in headless chromium, while real clients are live:
a classic and a KIP-848 group (librdkafka), a streams group member (StreamsGroupHeartbeat), a
RocketMQ push consumer and a POP SimpleConsumer (native client), a gRPC SimpleConsumer
(rocketmq-python-client); each group's page shows its members, assignments, lag and lag over time."""
from __future__ import annotations

import os
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer

import chromium
from client import ConsumeFrom, ConsumeStatus, Message, Producer, PushConsumer, SimpleConsumer
from gateway_process import GatewayProcess, free_port, wait_port

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kafka"))  # raw client, share helpers
from kafka_raw import RawClient  # noqa: E402

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = chromium.needs_chromium


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    http_port, grpc_port = free_port(), free_port()
    g = GatewayProcess(str(tmp_path_factory.mktemp("groups") / "data"),
                       extra_args=["--http-port", str(http_port), "--grpc-port", str(grpc_port),
                                   "--console-sample-ms", "300"])
    g.base, g.grpc = f"http://127.0.0.1:{http_port}", f"127.0.0.1:{grpc_port}"
    g.start()
    wait_port(grpc_port)
    yield g
    g.stop()


def _kafka_consumer(gw, group: str, protocol: str) -> Consumer:
    conf = {"bootstrap.servers": gw.kafka_bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    c.subscribe(["orders"])
    got, deadline = [], time.monotonic() + 30
    while len(got) < 3 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    c.commit(message=got[2], asynchronous=False)  # committed 3 of 10 on partition 0: lag 7
    return c


def _rows(browser) -> list[str]:
    return [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table tr")]


def test_every_kind_of_group(gw, browser):
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap})
    for i in range(10):
        p.produce("orders", value=b"o%d" % i, partition=0)
    assert p.flush(20) == 0
    del p  # closed now: its connection must not outlive the gateway
    with Producer("g-pg", gw.namesrv) as prod:
        for i in range(4):
            prod.send(Message("tasks", b"t%d" % i, tags="work"))
    classic = _kafka_consumer(gw, "g-classic", "classic")
    modern = _kafka_consumer(gw, "g-848", "consumer")
    raw = RawClient(gw.kafka_bootstrap, timeout=30)
    streams_member = uuid.uuid4().hex
    topology = {"epoch": 0, "subtopologies": [
        {"subtopology_id": "0", "source_topics": ["orders"], "source_topic_regex": [], "state_changelog_topics": [],
         "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}
    answer = raw.call(88, 0, {"group_id": "g-streams", "member_id": streams_member, "member_epoch": 0,
                              "endpoint_information_epoch": 0, "instance_id": None, "rack_id": None,
                              "rebalance_timeout_ms": 30000, "topology": topology, "active_tasks": [],
                              "standby_tasks": [], "warmup_tasks": [], "process_id": str(uuid.uuid4()),
                              "user_endpoint": None, "client_tags": [], "task_offsets": None,
                              "task_end_offsets": None, "shutdown_application": False})
    assert answer["error_code"] == 0, answer
    push = PushConsumer("g-push", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET)
    push.subscribe("tasks", "work")
    push.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
    push.start()
    pop = SimpleConsumer("g-pop", gw.namesrv, subscriptions={"tasks": "*"}, await_duration=2,
                         consume_from=ConsumeFrom.FIRST_OFFSET)
    pop.start()
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer as GrpcSimpleConsumer
    grpc = GrpcSimpleConsumer(ClientConfiguration(gw.grpc, Credentials(), request_timeout=5), "g-grpc",
                              {"tasks": FilterExpression("*")}, await_duration=2)
    grpc.startup()
    try:
        grpc.receive(4, 30)  # a ReceiveMessage call (what it gets does not matter here)
        held, deadline = [], time.monotonic() + 30
        while len(held) < 2 and time.monotonic() < deadline:
            held += pop.receive(max_messages=2, invisible_duration=300)  # leased, never acked: in flight
        time.sleep(2.0)  # heartbeats in, several samples of the lag taken

        browser.get(gw.base + "/groups")
        chromium.main_text(browser, "g-grpc")
        rows = _rows(browser)
        kinds = {name: next(r for r in rows if r.startswith(name + " ")) for name in
                 ("g-classic", "g-848", "g-streams", "g-push", "g-pop", "g-grpc")}
        assert "classic" in kinds["g-classic"] and "Stable" in kinds["g-classic"]
        assert "consumer" in kinds["g-848"] and "streams" in kinds["g-streams"]
        assert "rocketmq push" in kinds["g-push"] and "Online" in kinds["g-push"]
        assert kinds["g-pop"].startswith("g-pop rocketmq pop Online") and "(no live" not in kinds["g-pop"]
        assert kinds["g-grpc"].startswith("g-grpc grpc simple Online"), kinds["g-grpc"]
        chromium.shot(browser, "groups-every-kind")

        for name in ("g-classic", "g-848"):
            browser.get(f"{gw.base}/groups/{name}")
            chromium.main_text(browser, "Members")
            assert "orders 0 3 10 7" in _rows(browser)  # topic, queue, committed, end, lag
            member = [r for r in _rows(browser) if r.startswith(("classic ", "consumer "))]
            assert len(member) == 1 and "orders: 0" in member[0], member  # its assignment
            assert browser.find_elements(By.CSS_SELECTOR, "svg[aria-label='Lag (messages)'] polyline")
        chromium.shot(browser, "group-848")
        browser.get(gw.base + "/groups/g-streams")
        assert "tasks 0: 0" in chromium.main_text(browser, "tasks 0")  # subtopology 0, partition 0
        browser.get(gw.base + "/groups/g-push")
        assert "tasks: work" in chromium.main_text(browser, "subscribes")  # its subscription, with its filter
        browser.get(gw.base + "/groups/g-pop")
        chromium.main_text(browser, "Per-message progress")
        progress = [r for r in _rows(browser) if r.startswith("tasks ")]
        assert sum(int(r.split()[5]) for r in progress) == len(held) == 2, progress  # leased, never acked
        chromium.shot(browser, "group-pop")
        browser.get(gw.base + "/groups/g-grpc")
        assert "grpc simple" in chromium.main_text(browser, "grpc simple")
        browser.get(gw.base + "/grpc")  # the listener, its clients and per-method requests
        text = chromium.main_text(browser, "Requests")
        assert gw.grpc in text and "simple_consumer g-grpc tasks open" in text, text
        assert any(r.startswith("ReceiveMessage ") for r in _rows(browser)), _rows(browser)
        chromium.shot(browser, "grpc")
        browser.get(gw.base + "/cluster")
        chromium.main_text(browser, "Partitions")
        rows = _rows(browser)
        assert "orders 0 0 -1 0 0 0 10" in rows, rows  # topic, partition, leader, epoch, replicas, isr, ..., end
        chromium.shot(browser, "cluster")
        browser.get(gw.base + "/groups/no-such-group")
        assert "No group no-such-group." in chromium.main_text(browser, "No group")
    finally:
        for close in (classic.close, modern.close, push.shutdown, pop.shutdown, grpc.shutdown, raw.close):
            try:
                close()
            except Exception:  # one failing close must not leave the others open
                pass


@pytest.mark.timeout(600)
def test_share_group_with_the_stock_share_consumer(gw, browser):
    """KafkaShareConsumer (kafka-clients 4.x, compat.KafkaShare) holds 3 records unacknowledged:
    the share group's page shows it with its member, assignment and the 3 records in flight."""
    from compat.jvm import JAVA_DIR, KAFKA_CLIENTS, classpath
    from test_share_groups import share
    if not os.path.exists(os.path.join(JAVA_DIR, "kafka4", "target", "classes", "compat", "KafkaShare.class")):
        pytest.skip("compat.KafkaShare is not built (make compat-jars)")
    cp = classpath(KAFKA_CLIENTS["4"])
    topic, group = "shared", "g-share"
    share(cp, gw.kafka_bootstrap, topic, group, "produce", 6, "s")
    share(cp, gw.kafka_bootstrap, topic, group, "config", "share.auto.offset.reset=earliest")
    seen = {}

    def look():
        browser.get(gw.base + "/groups/g-share")
        seen["text"] = chromium.main_text(browser, "Per-message progress")
        seen["rows"] = _rows(browser)
        chromium.shot(browser, "group-share")

    share(cp, gw.kafka_bootstrap, topic, group, "restart", 3, 6, on_pause=look)
    assert "share" in seen["text"] and "shared: 0" in seen["text"], seen["text"]  # member and its assignment
    progress = [r for r in seen["rows"] if r.startswith("shared 0 ")]
    assert progress and int(progress[0].split()[5]) >= 3, progress  # held, unacknowledged: in flight
