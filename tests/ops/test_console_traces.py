"""A message's trace on the console's msgId view, in headless chromium. RocketMQ side: the stock
4.9 remoting Java client with message trace on (compat.RocketTrace, as tests/remoting/
test_message_trace.py runs it) sends a committed transactional and a plain message and consumes
both; each one's page shows the Pub, SubBefore and SubAfter records (group, client host, status) and
the transactional one its EndTransaction (COMMIT_MESSAGE); the same with the 5.x remoting client
writing to a customized trace topic, which the page is given. Trace messages with malformed bodies
next to them never break the page. Kafka side: an idempotent confluent-kafka producer's record shows
its producer id, client.id and address, and the group a confluent-kafka consumer committed past it;
a transactional producer's record, its transactional.id."""
from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer

import chromium
from client import Message, Producer
from compat.jvm import ScenarioRun
from gateway_process import GatewayProcess, free_port

pytest.importorskip("selenium")

pytestmark = [chromium.needs_chromium, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    http_port = free_port()
    work = tmp_path_factory.mktemp("traces")
    g = GatewayProcess(str(work / "data"), extra_args=["--http-port", str(http_port)])
    g.base, g.work = f"http://127.0.0.1:{http_port}", work
    g.start()
    yield g
    g.stop()


def _message_page(browser, gw, msg_id: str, topic: str = "", expected: str = "Trace") -> str:
    browser.get(f"{gw.base}/messages?msg_id={msg_id}&topic={topic}")
    return chromium.main_text(browser, expected)


def _rows(text: str) -> list[str]:
    """The trace table's lines, one per record (they start with the record type)."""
    return [line for line in text.splitlines() if line.split(" ")[0] in ("Pub", "SubBefore", "SubAfter",
                                                                          "EndTransaction")]


def _trace_pages(browser, gw, module: str, prefix: str, trace_topic: str = "") -> None:
    """The stock client `module` with message trace on sends and consumes a plain and a committed
    transactional message (to `trace_topic`, or the default topic); their pages show the records."""
    run = ScenarioRun(module, "compat.RocketTrace", [gw.namesrv, prefix, f"trace:{trace_topic or 'default'}"],
                      str(gw.work / f"logs-{prefix}"))
    r, shown_topic, topic = run["trace"], trace_topic or "RMQ_SYS_TRACE_TOPIC", f"{prefix}-traced"
    assert r["plain"]["types"] == ["Pub", "SubAfter", "SubBefore"], r  # the client itself found them
    with Producer(f"{prefix}-junk-pg", gw.namesrv) as prod:  # trace messages no client wrote well: shown around
        prod.send(Message(shown_topic, b"Pub\x01not-a-time\x02SubAfter\x01\xff\x02\x02", keys=r["plain"]["msg_id"]))
        prod.send(Message(shown_topic, bytes(range(256)), keys=r["plain"]["msg_id"]))
    if trace_topic:  # the default trace topic alone does not have them
        assert "No RocketMQ trace records" in _message_page(browser, gw, r["plain"]["msg_id"], topic, "No RocketMQ")
    query = f"{topic}&trace_topic={trace_topic}"
    text = _message_page(browser, gw, r["plain"]["msg_id"], query, "SubAfter")
    rows = _rows(text)
    assert [row.split(" ")[0] for row in rows] == ["Pub", "SubBefore", "SubAfter"], text
    pub, before, after = rows
    assert f"{prefix}-pg" in pub and "success" in pub and "127.0.0.1" in pub and shown_topic in pub, pub
    assert f"{prefix}-cg" in before and "consuming" in before, before
    assert f"{prefix}-cg" in after and "success" in after, after
    assert f"{prefix}-cg" in text.split("consumed by group")[1]  # its committed offset is past the message
    browser.execute_script("document.querySelector('main h4').scrollIntoView()")
    chromium.shot(browser, f"messages-trace-{module}")
    text = _message_page(browser, gw, r["tx"]["msg_id"], query, "EndTransaction")
    types = [row.split(" ")[0] for row in _rows(text)]
    assert sorted(types) == ["EndTransaction", "Pub", "SubAfter", "SubBefore"], text
    end = [row for row in _rows(text) if row.startswith("EndTransaction")][0]
    assert f"{prefix}-tx-pg" in end and "COMMIT_MESSAGE" in end, end


def test_rocketmq_trace_of_a_plain_and_a_transactional_message(gw, browser):
    _trace_pages(browser, gw, "rocketmq49", "trw")


def test_rocketmq5_client_with_a_customized_trace_topic(gw, browser):
    """The 5.x remoting client writing to its customizedTraceTopic (tests/long_tests.txt: one more JVM)."""
    _trace_pages(browser, gw, "rocketmq5", "tr5w", "TraceTopicCustom")


def test_kafka_producer_and_consuming_groups(gw, browser):
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "enable.idempotence": True,
                       "client.id": "kt-producer"})
    for i in range(3):
        p.produce("ktraced", value=b"k-%d" % i, partition=0)
    assert p.flush(20) == 0
    del p
    tx = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "transactional.id": "kt-tx", "client.id": "kt-txp"})
    tx.init_transactions(20)
    tx.begin_transaction()
    tx.produce("ktraced-tx", value=b"in-tx", partition=0)
    tx.commit_transaction(20)
    del tx
    c = Consumer({"bootstrap.servers": gw.kafka_bootstrap, "group.id": "kt-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe(["ktraced"])
        got, deadline = [], time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
        assert len(got) >= 2
        c.commit(message=got[1], asynchronous=False)  # committed offset 2: records 0 and 1 consumed
    finally:
        c.close()
    browser.get(gw.base + "/messages?topic=ktraced&queue=0&offset=0")
    browse = chromium.main_text(browser, "k-2")
    offset_id = re.search(r"msgId ([0-9A-F]{32})", browse)[1]  # the batch's offsetMsgId
    text = _message_page(browser, gw, offset_id, expected="Produced by")
    produced = ([line for line in text.splitlines() if line.startswith("Produced by")] or [text])[0]
    assert "producer id none" not in produced and "epoch 0" in produced, produced
    assert "client.id kt-producer from 127.0.0.1" in produced, produced
    assert "kt-group 2" in text, text  # the group, its committed offset
    browser.get(gw.base + "/messages?topic=ktraced-tx&queue=0&offset=0")
    offset_id = re.search(r"msgId ([0-9A-F]{32})", chromium.main_text(browser, "in-tx"))[1]
    text = _message_page(browser, gw, offset_id, expected="Produced by")
    assert "(transactional) · client.id kt-txp from 127.0.0.1 · transactional.id kt-tx" in text, text
    assert "No group has committed an offset past this message" in text, text
    browser.execute_script("document.querySelector('main h4').scrollIntoView()")
    chromium.shot(browser, "messages-kafka-trace")
