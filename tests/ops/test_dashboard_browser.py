"""The dashboard in a real browser: Debian's chromium, headless, driven by Selenium through
chromium-driver (`make setup` installs both: mk/ops.mk), clicking through every page of a live
gateway holding data produced by librdkafka and the native client. A screenshot of every page is
saved under $TEST_ARTIFACTS_DIR (default: test-artifacts/) in dashboard/."""
from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer

from client import (Admin, ConsumeFrom, ConsumeStatus, Message, Producer, PushConsumer, TransactionProducer,
                    TransactionState)
import chromium
from gateway_process import GatewayProcess, free_port

pytest.importorskip("selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = chromium.needs_chromium


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    http_port = free_port()
    g = GatewayProcess(str(tmp_path_factory.mktemp("dash") / "data"),
                       extra_args=["--http-port", str(http_port), "--transaction-check-interval-ms", "600000",
                                   "--console-sample-ms", "300"])
    g.base = f"http://127.0.0.1:{http_port}"
    g.start()
    _populate(g)
    yield g
    g.stop()


def _populate(gw) -> None:
    """Kafka records with keys and a committed group; native messages with tags, a delayed one, an
    undecided transaction and dead letters."""
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap})
    for i in range(6):
        p.produce("shop", key=b"order-%d" % i, value=b'{"order": %d}' % i, partition=0,
                  headers=[("source", b"web")])
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "billing", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["shop"])
    got, deadline = [], time.monotonic() + 30
    while len(got) < 2 and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            got.append(m)
    c.commit(message=got[1], asynchronous=False)
    c.close()

    with Admin(gw.namesrv) as admin:
        admin.create_topic("native", queues=1)
    with Producer("dash-pg", gw.namesrv) as prod:
        prod.send(Message("native", b"\xff\xfebinary", tags="bin"))
        prod.send(Message("native", b"later", delay_level=18))
        prod.send(Message("native", b"poison", keys="bad-1", tags="poison"))
    with TransactionProducer("dash-tx", gw.namesrv, local_transaction=lambda m, a: TransactionState.UNKNOWN,
                             check_listener=lambda m: TransactionState.UNKNOWN) as tp:
        tp.send_in_transaction(Message("native", b"undecided"))

    seen = []

    def reject(msgs):
        seen.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER

    dead = PushConsumer("dash-cg", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, max_reconsume_times=0)
    dead.subscribe("native", "poison")
    dead.register_listener(reject)
    dead.start()
    try:
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # the send-back to %DLQ% follows the listener's answer
    finally:
        dead.shutdown()


shot = chromium.shot


def text(browser) -> str:
    return chromium.main_text(browser)


def click(browser, link_text: str, then: str = "") -> None:
    """Follow a link and wait until the new page's main text shows `then`."""
    browser.find_element(By.LINK_TEXT, link_text).click()
    chromium.main_text(browser, then)


def test_overview_and_topics(gw, browser):
    browser.get(gw.base + "/")
    assert browser.title == "Overview · rocketgate"
    overview = text(browser)
    assert "Ready\nyes" in overview and "kafka" in overview and "Throughput" in overview
    assert " KiB" in overview and " B/s" in overview and "Sign in" not in overview  # no admins here
    assert {"Produced", "Consumed", "CommitLog writes"} <= _charts(browser)
    shot(browser, "overview")
    click(browser, "Topics", "Topics")
    assert "shop" in text(browser) and "native" in text(browser)
    shot(browser, "topics")
    click(browser, "shop", "Topic shop")
    assert browser.title == "Topic shop · rocketgate"
    shot(browser, "topic-shop")
    click(browser, "messages", '{"order": 0}')  # browse queue 0 from its first offset
    body = text(browser)
    assert '{"order": 0}' in body and "order-5" in body and "source" in body
    shot(browser, "messages-browse")


def _charts(browser) -> set[str]:
    """The labels of the page's SVG charts that have a line drawn."""
    return {svg.get_attribute("aria-label") for svg in browser.find_elements(By.CSS_SELECTOR, "svg.chart")
            if svg.find_elements(By.TAG_NAME, "polyline")}


def test_topic_rates_and_size_over_time(gw, browser):
    """Records produced and consumed while the gateway samples: the topic page charts them."""
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap})
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "charts", "auto.offset.reset": "earliest"})
    c.subscribe(["rates"])
    for i in range(20):
        p.produce("rates", value=b"x" * 2000, partition=0)
        p.flush(10)
        c.poll(0.2)
    c.close()
    time.sleep(1.0)  # a few more samples
    browser.get(gw.base + "/topics")
    row = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table tr") if r.text.startswith("rates ")][0]
    assert "B/s" in row
    browser.get(gw.base + "/topics/rates")
    chromium.main_text(browser, "Last hour")
    assert {"Produced", "Consumed", "Messages in", "Messages stored"} <= _charts(browser)
    assert "Messages stored (now 20)" in text(browser)
    top = browser.find_element(By.CSS_SELECTOR, "svg[aria-label=Produced] text").text
    assert top.endswith("B/s") and not top.startswith("0 ")  # the highest produce rate seen, for people
    assert "retention.ms" in text(browser) and "default" in text(browser)  # configs with their source
    assert "Sign in" not in text(browser) and "Set config" not in text(browser)
    shot(browser, "topic-rates")


def test_groups_of_both_protocols(gw, browser):
    browser.get(gw.base + "/")
    click(browser, "Groups", "Consumer groups")
    assert "billing" in text(browser) and "dash-cg" in text(browser)
    shot(browser, "groups")
    click(browser, "billing", "Group billing")
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table tr")]
    assert "shop 0 2 6 4" in rows  # topic, queue, committed, end, lag
    shot(browser, "group-billing")


def test_message_browser_by_key_and_msgid(gw, browser):
    browser.get(gw.base + "/messages")
    key_form = browser.find_elements(By.TAG_NAME, "form")[2]
    key_form.find_element(By.NAME, "topic").send_keys("shop")
    key_form.find_element(By.NAME, "key").send_keys("order-3")
    key_form.find_element(By.TAG_NAME, "button").click()
    found = chromium.main_text(browser, '{"order": 3}')  # once the answer page has loaded
    assert '{"order": 3}' in found and '{"order": 4}' not in found
    shot(browser, "messages-by-key")
    click(browser, "shop / 0 @ 3", '{"order": 4}')  # the record's position: browse from there
    assert text(browser).index('{"order": 3}') < text(browser).index('{"order": 4}')
    browser.get(gw.base + "/messages?topic=native&queue=0&offset=0")
    assert "body (hex):" in text(browser) and "fffe" in text(browser)  # not UTF-8: hex
    poison = [h for h in browser.find_elements(By.CSS_SELECTOR, "main h3") if "poison" in
              h.find_element(By.XPATH, "following-sibling::pre[1]").text][0]
    msg_link = poison.find_element(By.XPATH, "following-sibling::p[1]/a")
    msg_id = msg_link.text
    msg_link.click()
    WebDriverWait(browser, 10).until(lambda b: f"msg_id={msg_id}" in b.current_url)
    assert "poison" in chromium.main_text(browser, "poison") and "fffe" not in text(browser)
    shot(browser, "messages-by-msgid")


def test_dlq_delay_and_transactions(gw, browser):
    browser.get(gw.base + "/")
    click(browser, "DLQ", "Dead letters")
    assert "dash-cg" in text(browser)
    shot(browser, "dlq")
    click(browser, "dash-cg", "Dead letters of dash-cg")
    assert "bad-1" in text(browser) and "native" in text(browser)
    shot(browser, "dlq-group")
    browser.find_element(By.CSS_SELECTOR, "main table tr:nth-child(2) td:nth-child(2) a").click()
    assert "poison" in text(browser)
    click(browser, "Delay queues", "next_due")
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table tr")]
    assert any(r.startswith("18 1 ") for r in rows), rows
    shot(browser, "delay")
    click(browser, "Transactions", "Pending transactions")
    assert "dash-tx" in text(browser) and "native" in text(browser)
    shot(browser, "transactions")
    assert len(os.listdir(chromium.ARTIFACTS)) >= 11


def test_pages_escape_what_they_show(gw, browser):
    browser.get(gw.base + "/messages?topic=%3Cscript%3Ealert(1)%3C/script%3E&queue=0&offset=0")
    assert "<script>alert(1)</script>" in browser.find_element(By.NAME, "topic").get_attribute("value")
    assert not browser.find_elements(By.XPATH, "//main//script")
    browser.get(gw.base + "/topics/nothing-here")
    assert "No topic nothing-here." in text(browser)
