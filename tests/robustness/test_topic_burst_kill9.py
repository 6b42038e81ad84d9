"""kill -9 during a burst of CreateTopics (one topic per request, several connections, so the
journal's batches and at least one snapshot happen under load): after the restart every topic
whose CreateTopics was answered without error is there, with its partition count."""
from __future__ import annotations

import os
import threading
import time

from confluent_kafka.admin import AdminClient

from tests.kafka.kafka_raw import RawClient

CREATE_TOPICS = 19
CONNECTIONS = 4
ENOUGH = 1500  # more than store.topic_journal.SNAPSHOT_CHANGES: a snapshot and a journal tail


def burst(bootstrap: str, worker: int, acked: list, stop: threading.Event) -> None:
    try:
        client = RawClient(bootstrap, timeout=10)
        i = 0
        while not stop.is_set():
            name = f"burst-{worker}-{i}"
            partitions = 1 + i % 3
            resp = client.call(CREATE_TOPICS, 5, {"topics": [
                {"name": name, "num_partitions": partitions, "replication_factor": 1}], "timeout_ms": 5000})
            if resp["topics"][0]["error_code"] == 0:
                acked.append((name, partitions))
            i += 1
    except (OSError, ConnectionError, AssertionError):
        pass  # the gateway was killed mid-request: that topic was not acknowledged


def listed_topics(bootstrap: str) -> dict:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}


def test_every_acknowledged_topic_survives_kill_9_during_a_create_burst(gateway_factory):
    g = gateway_factory()
    acked: list = []
    stop = threading.Event()
    workers = [threading.Thread(target=burst, args=(g.kafka_bootstrap, w, acked, stop)) for w in range(CONNECTIONS)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + 300  # a slow machine only makes the burst longer
    while len(acked) < ENOUGH and time.monotonic() < deadline:
        time.sleep(0.05)
    g.kill9()  # the workers are mid-request
    stop.set()
    for w in workers:
        w.join(30)
    survivors = dict(acked)
    assert len(survivors) >= ENOUGH
    journal = os.path.join(g.data_dir, "config", "topics.journal")
    assert os.path.getsize(journal) > 0  # the newest changes are only in the journal: the restart replays it
    g.start()
    listed = listed_topics(g.kafka_bootstrap)
    missing = {n: p for n, p in survivors.items() if listed.get(n) != p}
    assert not missing, f"{len(missing)} acknowledged topics lost or changed, e.g. {list(missing.items())[:5]}"
