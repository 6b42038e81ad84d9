"""Cross-protocol through a live gateway, per the Kafka ⇄ RocketMQ mapping in ARCHITECTURE.md:
a Kafka producer (librdkafka) → the stock Java RocketMQ push consumer with a tag subscription, and the
Java RocketMQ producer → a Kafka consumer seeing tags, keys and properties as headers."""
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from compat.harness import run_on_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from shard_aware import rocketmq_queue

# The module's JVM run (its fixture) bounds each scenario's waits; it counts against the first test.
pytestmark = pytest.mark.timeout(900)


def produce_tagged(gw):
    """Kafka records with a TAGS header (TagK on even, TagZ on odd), a key and a user header."""
    p = Producer({"bootstrap.servers": gw.kafka_bootstrap})
    for i in range(6):
        tag = b"TagK" if i % 2 == 0 else b"TagZ"
        p.produce("x-k2r", key=f"kk-{i}".encode(), value=f"kv-{i}".encode(), partition=0,
                  headers=[("TAGS", tag), ("h", f"hv-{i}".encode())])
    assert p.flush(30) == 0


@pytest.fixture(scope="module", params=sorted(ROCKETMQ_CLIENTS))
def cross(request, tmp_path_factory):
    with run_on_gateway(tmp_path_factory.mktemp(f"cross-{request.param}"), ROCKETMQ_CLIENTS[request.param],
                        "compat.RocketCompat",
                        lambda gw: [gw.namesrv, "x", "cross_consume:x-k2r:TagK:3", "cross_produce:x-r2k"],
                        before=produce_tagged) as results:
        yield results


def test_kafka_producer_to_rocketmq_consumer(cross):
    got = sorted(cross["cross_consume"]["received"], key=lambda m: m["body"])
    assert [m["body"] for m in got] == ["kv-0", "kv-2", "kv-4"], got
    for m in got:
        i = m["body"].split("-")[1]
        assert (m["tags"], m["keys"], m["props"]) == ("TagK", f"kk-{i}", {"h": f"hv-{i}"}), m


def test_rocketmq_producer_to_kafka_consumer(cross, request):
    cluster_ids = request.node.callspec.params["cross"] == "5"  # RocketMQ 5 sends by the topic's own queue ids
    sent = cross["cross_produce"]["sent"]
    c = Consumer({"bootstrap.servers": cross.gw.kafka_bootstrap, "group.id": "x-kafka", "enable.auto.commit": False})
    try:
        md = c.list_topics("x-r2k", timeout=10).topics["x-r2k"]
        leaders = {p: m.leader for p, m in md.partitions.items()}
        c.assign([TopicPartition("x-r2k", p, 0) for p in md.partitions])
        got = []
        for _ in range(100):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
            if len(got) == len(sent):
                break
    finally:
        c.close()
    assert sorted(m.value() for m in got) == [b"cross-0", b"cross-1", b"cross-2"], got
    for m in got:
        i = m.value().decode().split("-")[1]
        headers = m.headers() or []
        assert m.key() == f"ck-{i}".encode(), (m.key(), headers)
        for h in [("TAGS", b"TagX"), ("KEYS", f"ck-{i}".encode()), ("prop", f"val-{i}".encode())]:
            assert h in headers, (h, headers)
        queue = rocketmq_queue(leaders, m.partition(), cluster_ids)  # the partition's (broker, queue id)
        assert (*queue, m.offset()) in {(s["broker"], s["queue"], s["offset"]) for s in sent}, (queue, m.offset(), sent)
