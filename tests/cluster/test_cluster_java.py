"""The stock Java clients (compat/java: kafka-clients 4.x, rocketmq-client 5.x remoting) against three
gateways + etcd: the same scenarios and checks as tests/compat (validated there against Apache Kafka and
RocketMQ), now with the topics' queues led by different gateways. Long: `make cluster-long`
(CLUSTER_LONG=1)."""
from __future__ import annotations

import collections
import os

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from acked_records import poll_past
from clusters import require_etcd, start_cluster
from compat import checks
from compat.jvm import ScenarioRun

pytestmark = [pytest.mark.timeout(900),
              pytest.mark.skipif(not os.environ.get("CLUSTER_LONG"), reason="long: make cluster-long")]

KAFKA = ["codecs", "idempotent", "group", "commit1", "commit2"]
ROCKETMQ = ["send", "ordered", "push_tags", "lite_subscribe", "transaction", "reconsume"]


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory):
    require_etcd()
    base = tmp_path_factory.mktemp("java-cluster")
    cluster = start_cluster(base, lease_ttl=None)
    yield base, cluster.gateways
    cluster.stop()


@pytest.fixture(scope="module")
def java_kafka(cluster3):
    base, gws = cluster3
    run = ScenarioRun("kafka4", "compat.KafkaCompat", [",".join(g.kafka_bootstrap for g in gws.values()), "ck", *KAFKA],
                      str(base / "kafka-logs"))
    return run


@pytest.fixture(scope="module")
def java_rocketmq(cluster3):
    base, gws = cluster3
    return ScenarioRun("rocketmq5", "compat.RocketCompat", [gws[2].namesrv, "cr", *ROCKETMQ], str(base / "rmq-logs"))


@pytest.mark.parametrize("codec", checks.CODECS)
def test_kafka_codecs(java_kafka, codec):
    checks.kafka_codec(java_kafka["codecs"], codec)


def test_kafka_idempotent(java_kafka):
    checks.kafka_idempotent(java_kafka["idempotent"])


def test_kafka_group_rebalance(java_kafka):
    checks.kafka_group(java_kafka["group"])


def test_kafka_commit_resume(java_kafka):
    checks.kafka_commit(java_kafka["commit1"], java_kafka["commit2"])


def read_all(gws, topic: str, want: int, timeout: float = 30.0) -> list[str]:
    """Every value of `topic`, read by a Kafka consumer from all partitions (whichever gateway leads).
    (The Java scenarios' own readers tell messages apart by queue id and offset, which repeat across
    brokers, so the cluster tests read back through Kafka.)"""
    bootstrap = ",".join(g.kafka_bootstrap for g in gws.values())
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-" + topic, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in md.topics[topic].partitions])
    try:
        return sorted(m.value().decode() for m in poll_past(c, want, timeout, skip_errors=True))
    finally:
        c.close()


def test_rocketmq_send_spreads_over_brokers(java_rocketmq, cluster3):
    r = java_rocketmq["send"]
    assert [s["status"] for s in r["sync"]] == ["SEND_OK"] * 10, r["sync"]
    assert r["async_done"] is True and [a.get("status") for a in r["async"]] == ["SEND_OK"] * 10, r["async"]
    assert r["batch"]["status"] == "SEND_OK", r["batch"]
    brokers = collections.Counter(s["broker"] for s in r["sync"])
    assert set(brokers) == {"broker-1", "broker-2", "broker-3"}, brokers
    expected = ({f"sync-{i}" for i in range(10)} | {f"async-{i}" for i in range(10)}
                | {f"oneway-{i}" for i in range(5)} | {f"batch-{i}" for i in range(10)})
    assert read_all(cluster3[1], "cr-send", len(expected)) == sorted(expected)


def test_rocketmq_ordered(java_rocketmq):
    checks.rocketmq_ordered(java_rocketmq["ordered"])


def test_rocketmq_push_tags(java_rocketmq):
    checks.rocketmq_push_tags(java_rocketmq["push_tags"])


def test_rocketmq_lite_pull_commit_resume(java_rocketmq):
    checks.rocketmq_lite(java_rocketmq["lite_subscribe"])


def test_rocketmq_transaction(java_rocketmq, cluster3):
    r = java_rocketmq["transaction"]
    assert [(s["status"], s["local"]) for s in r["sent"]] == \
        [("SEND_OK", "COMMIT_MESSAGE" if i % 2 == 0 else "ROLLBACK_MESSAGE") for i in range(10)], r["sent"]
    assert read_all(cluster3[1], "cr-tx", 5) == sorted(f"commit-{i}" for i in range(0, 10, 2))


def test_rocketmq_reconsume_via_retry_topic(java_rocketmq):
    checks.rocketmq_reconsume(java_rocketmq["reconsume"])
