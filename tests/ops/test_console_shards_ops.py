"""The pages of shard 0's console that read RocketMQ's local topics and each process's own history
(`python -m gateway --shards 2 --http-port P`, docs/shards.md): delayed messages and undecided
transactions stored on both shards, each shard's disk and its throughput chart, all shown on shard
0's pages with the shard that holds them; the dead letters both shards made, all in shard 0's DLQ
(a `%DLQ%` topic is led whole by shard 0: docs/shards.md "Dead letters")."""
from __future__ import annotations

import re
import time

import httpx

import chromium
from client import ConsumeFrom, ConsumeStatus, Message, Producer, PushConsumer, TransactionProducer, TransactionState
from gateway_process import free_port
from tests.shards.sharded import Sharded, wait_for

pytestmark = chromium.needs_chromium

TOPICS = ("ops-dead", "ops-delay", "ops-tx")


def _store_on_both_shards(sharded) -> None:
    """8 messages each to 4-queue topics led by both shards: a dead letter per message (a push
    consumer that rejects with no retries), a message delayed 2 h, an undecided transaction."""
    seen = []

    def reject(msgs):
        seen.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER

    dead = PushConsumer("ops-cg", sharded.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, max_reconsume_times=0)
    dead.subscribe("ops-dead")
    dead.register_listener(reject)
    dead.start()
    try:
        with Producer("ops-pg", sharded.namesrv) as prod:
            for i in range(8):
                prod.send(Message("ops-dead", b"poison-%d" % i))
                prod.send(Message("ops-delay", b"later-%d" % i, delay_level=18))
        unknown = lambda *_: TransactionState.UNKNOWN  # noqa: E731
        with TransactionProducer("ops-txp", sharded.namesrv, local_transaction=unknown,
                                 check_listener=unknown) as tp:
            for i in range(8):
                tp.send_in_transaction(Message("ops-tx", b"undecided-%d" % i))
        wait_for(lambda: len({m.body for m in seen}) == 8, what="the consumer to reject all 8 messages")
    finally:
        dead.shutdown()


def _shards_of(text: str, row: str) -> set[str]:
    """The shard column (second) of the rows of `text` that start with `row`."""
    return set(re.findall(rf"^{row} (\d) ", text, re.M))


def test_ops_pages_show_every_shard(tmp_path):
    from confluent_kafka.admin import AdminClient, NewTopic
    http_port = free_port()
    sharded = Sharded(str(tmp_path), shards=2, extra_args=["--http-port", str(http_port),
                                                           "--console-sample-ms", "300"])
    console = f"http://127.0.0.1:{http_port}"
    browser = None
    try:
        sharded.start()
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
        for topic, done in admin.create_topics([NewTopic(t, 4, 1) for t in TOPICS]).items():
            done.result(30)
        _store_on_both_shards(sharded)
        wait_for(lambda: sum(httpx.get(f"{console}/api/dlq").json().values()) == 8,
                 what="shard 0's /api/dlq to count the dead letters both shards made")
        time.sleep(1.5)  # a few history samples of the produce on each shard
        browser = chromium.start()
        texts = {}
        for path, shows in (("/dlq", "ops-cg"), ("/dlq/ops-cg", "ops-dead"), ("/delay", "ops-delay"),
                            ("/transactions", "ops-tx"), ("/", "Disk"), ("/topics/ops-dead", "Produced")):
            browser.get(console + path)
            texts[path] = chromium.main_text(browser, shows)
        chromium.shot(browser, "topic-shards-charts")
    finally:
        if browser is not None:
            browser.quit()
        sharded.stop()
    # made by both shards, all in shard 0's DLQ (shard 1 lists the topic it follows, empty)
    rows = dict(re.findall(r"^ops-cg (\d) (\d+)$", texts["/dlq"], re.M))
    assert rows.get("0") == "8" and all(n == "0" for s, n in rows.items() if s != "0"), texts["/dlq"]
    letters = re.findall(r"^\d+ (\d) \S+ ops-dead ", texts["/dlq/ops-cg"], re.M)
    assert len(letters) == 8 and set(letters) == {"0"}, texts["/dlq/ops-cg"]
    waiting = re.findall(r"^18 (\d) \S+ ops-delay ", texts["/delay"], re.M)
    assert len(waiting) == 8 and set(waiting) == {"0", "1"}, texts["/delay"]
    assert _shards_of(texts["/delay"], "18") == {"0", "1"}
    halves = re.findall(r"^\d+ (\d) ops-tx ops-txp ", texts["/transactions"], re.M)
    assert len(halves) == 8 and set(halves) == {"0", "1"}, texts["/transactions"]
    assert "8 undecided" in texts["/transactions"]
    disk = texts["/"].split("Disk")[-1]
    assert {"0", "1"} <= set(re.findall(r"^(\d) commitlog ", disk, re.M)), disk
    for chart in ("Produced", "CommitLog writes"):
        assert re.search(rf"{chart} \(shard 0 now [^·]+ · shard 1 now ", texts["/"]), texts["/"]
    assert re.search(r"Messages stored \(shard 0 now \d+ · shard 1 now \d+\)", texts["/topics/ops-dead"]), \
        texts["/topics/ops-dead"]
