"""A message's trace on the console's msgId view, in headless chromium. RocketMQ side: the stock
4.9 remoting Java client with message trace on (compat.RocketTrace, as tests/remoting/
test_message_trace.py runs it) sends a committed transactional and a plain message and consumes
both; each one's page shows the Pub, SubBefore and SubAfter records (group, client host, status) and
the transactional one its EndTransaction (COMMIT_MESSAGE). Kafka side: an idempotent confluent-kafka
producer's record shows its producer id, client.id and address, and the group a confluent-kafka consumer committed past it.
A trace message with a malformed body is shown around, never breaks the page."""
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


def test_rocketmq_trace_of_a_plain_and_a_transactional_message(gw, browser):
    run = ScenarioRun("rocketmq49", "compat.RocketTrace", [gw.namesrv, "trw", "trace:default"], str(gw.work / "logs"))
    r = run["trace"]
    assert r["plain"]["types"] == ["Pub", "SubAfter", "SubBefore"], r  # the client itself found them
    with Producer("junk-pg", gw.namesrv) as prod:  # a trace message no client wrote well: shown around
        prod.send(Message("RMQ_SYS_TRACE_TOPIC", b"Pub\x01not-a-time\x02SubAfter\x01\xff\x02\x02",
                          keys=r["plain"]["msg_id"]))
        prod.send(Message("RMQ_SYS_TRACE_TOPIC", bytes(range(256)), keys=r["plain"]["msg_id"]))
    text = _message_page(browser, gw, r["plain"]["msg_id"], "trw-traced", "SubAfter")
    rows = _rows(text)
    assert [row.split(" ")[0] for row in rows] == ["Pub", "SubBefore", "SubAfter"], text
    pub, before, after = rows
    assert "trw-pg" in pub and "success" in pub and "127.0.0.1" in pub and "RMQ_SYS_TRACE_TOPIC" in pub, pub
    assert "trw-cg" in before and "consuming" in before, before
    assert "trw-cg" in after and "success" in after, after
    assert "trw-cg" in text.split("consumed by group")[1]  # its committed offset is past the message
    browser.execute_script("document.querySelector('main h4').scrollIntoView()")
    chromium.shot(browser, "messages-trace")
    text = _message_page(browser, gw, r["tx"]["msg_id"], "trw-traced", "EndTransaction")
    types = [row.split(" ")[0] for row in _rows(text)]
    assert sorted(types) == ["EndTransaction", "Pub", "SubAfter", "SubBefore"], text
    end = [row for row in _rows(text) if row.startswith("EndTransaction")][0]
    assert "trw-tx-pg" in end and "COMMIT_MESSAGE" in end, end


def test_kafka_producer_and_consuming_groups(gw, browser):
    p = KafkaProducer({"bootstrap.servers": gw.kafka_bootstrap, "enable.idempotence": True,
                       "client.id": "kt-producer"})
    for i in range(3):
        p.produce("ktraced", value=b"k-%d" % i, partition=0)
    assert p.flush(20) == 0
    del p
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
    browser.execute_script("document.querySelector('main h4').scrollIntoView()")
    chromium.shot(browser, "messages-kafka-trace")
