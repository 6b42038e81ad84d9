"""The Cluster page of `python -m gateway --shards 2 --http-port P` (docs/shards.md): the console runs
on shard 0 and lists both shards as the cluster's gateways, each with its own Kafka and remoting port,
and a topic's partitions led by both."""
from __future__ import annotations

import re

import httpx

import chromium
from gateway_process import free_port
from tests.shards.sharded import Sharded, wait_for

pytestmark = chromium.needs_chromium


def test_cluster_page_lists_every_shard(tmp_path):
    from confluent_kafka.admin import AdminClient, NewTopic
    http_port = free_port()
    sharded = Sharded(str(tmp_path), shards=2, extra_args=["--http-port", str(http_port)])
    browser = None
    try:
        sharded.start()
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
        admin.create_topics([NewTopic("sharded-console", 4, 1)])["sharded-console"].result(30)
        browser = chromium.start()

        def page():
            browser.get(f"http://127.0.0.1:{http_port}/cluster")
            text = chromium.main_text(browser, "Partitions")
            return text if "sharded-console 3" in text else None
        text = wait_for(page, what="the cluster page to list the topic's partitions")
        chromium.shot(browser, "cluster-shards")
    finally:
        if browser is not None:
            browser.quit()
        sharded.stop()
    gateways = text.split("Gateways")[1].split("Partitions")[0]
    rows = re.findall(r"^(\d) 127\.0\.0\.1 (\d+) (\d+)", gateways, re.M)
    assert [r[0] for r in rows] == ["1", "2"], gateways
    assert (str(sharded.kafka_port), str(sharded.remoting_port)) == rows[0][1:]
    assert len({r[1] for r in rows}) == 2  # each shard its own Kafka port
    leaders = set(re.findall(r"^sharded-console \d (\d) ", text, re.M))
    assert leaders == {"1", "2"}, text


def test_console_counts_every_shard(tmp_path):
    """Topics, queues and group lag of both shards on shard 0's console and JSON API: 4 partitions led by
    two shards, 10 records each, a group committed at 3 on each."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    http_port = free_port()
    sharded = Sharded(str(tmp_path), shards=2, extra_args=["--http-port", str(http_port)])
    api = f"http://127.0.0.1:{http_port}/api"
    browser = None
    try:
        sharded.start()
        admin = AdminClient({"bootstrap.servers": sharded.kafka_bootstrap})
        admin.create_topics([NewTopic("every-shard", 4, 1)])["every-shard"].result(30)
        producer = Producer({"bootstrap.servers": sharded.kafka_bootstrap, "acks": "all"})
        for partition in range(4):
            for i in range(10):
                producer.produce("every-shard", f"v{i}".encode(), partition=partition)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": sharded.kafka_bootstrap, "group.id": "every-shard-group"})
        try:
            consumer.commit(offsets=[TopicPartition("every-shard", p, 3) for p in range(4)], asynchronous=False)
        finally:
            consumer.close()

        def topic_row():
            rows = [r for r in httpx.get(f"{api}/topics").json() if r["topic"] == "every-shard"]
            return rows[0] if rows and rows[0]["messages"] == 40 else None
        row = wait_for(topic_row, what="/api/topics to count the records of both shards")
        lag = wait_for(lambda: (rows := httpx.get(f"{api}/groups/every-shard-group").json()) and
                       sum(r["lag"] for r in rows) == 28 and rows, what="the group's lag on both shards")
        groups = {g["group"]: g for g in httpx.get(f"{api}/groups").json()}

        browser = chromium.start()
        browser.get(f"http://127.0.0.1:{http_port}/topics")
        topics_text = chromium.main_text(browser, "every-shard")
        browser.get(f"http://127.0.0.1:{http_port}/topics/every-shard")
        topic_text = chromium.main_text(browser, "Queues")
        chromium.shot(browser, "topic-shards")
        browser.get(f"http://127.0.0.1:{http_port}/")
        overview = chromium.main_text(browser, "Shards")
    finally:
        if browser is not None:
            browser.quit()
        sharded.stop()
    assert sorted((q["queue"], q["first"], q["end"]) for q in row["queues"]) == [(p, 0, 10) for p in range(4)], row
    assert {q["shard"] for q in row["queues"]} == {0, 1}, row
    assert sorted((r["queue"], r["committed"], r["end"]) for r in lag) == [(p, 3, 10) for p in range(4)]
    assert {r["shard"] for r in lag} == {0, 1}
    assert groups["every-shard-group"]["lag"] == 28
    assert re.search(r"^every-shard 4 4 \S+ 40 ", topics_text, re.M), topics_text
    queue_rows = re.findall(r"^(\d) (\d) 0 10 10 messages", topic_text, re.M)
    assert sorted(int(q) for q, _shard in queue_rows) == [0, 1, 2, 3], topic_text
    assert {s for _q, s in queue_rows} == {"0", "1"}, topic_text
    assert re.search(r"^0 1 yes yes ", overview, re.M) and re.search(r"^1 2 yes yes ", overview, re.M), overview
