"""The Cluster page of `python -m gateway --shards 2 --http-port P` (docs/shards.md): the console runs
on shard 0 and lists both shards as the cluster's gateways, each with its own Kafka and remoting port,
and a topic's partitions led by both."""
from __future__ import annotations

import re

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
