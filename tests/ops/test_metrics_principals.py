"""Per-topic fetch counters and per-principal request counters on /metrics of a real gateway with SASL_SSL,
ACLs and remoting AccessKeys: librdkafka authenticated as admin, the native client signing as AK-admin (user
admin) and an anonymous client on the PLAINTEXT listener each show up under their own principal, and the
bytes each protocol's consumers received show up under the topic they read."""
from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, Producer as KafkaProducer, TopicPartition

import metrics_page
from client import ConsumeFrom, LitePullConsumer, Message, Producer
from metrics_page import sample
from security.credentials import CredentialStore
from tests.gateway_process import free_port
from tests.security import kafka_gateway as kg

AK, SK = "AK-admin", "SK-admin"
VALUE = b"v" * 200


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("principals"))
    CredentialStore(os.path.join(base, "data", "config")).set_access_key(AK, SK, user=kg.ADMIN)
    http_port = free_port()
    g = kg.start(base, ["--http-port", str(http_port)])
    g.http = f"127.0.0.1:{http_port}"
    yield g
    g.stop()


def scrape(gw) -> dict:
    return metrics_page.scrape(gw.http)


def kafka_round_trip(conf: dict, topic: str, n: int) -> int:
    """Produces n records to partition 0 and reads them back; the value bytes received."""
    p = KafkaProducer(conf)
    for _ in range(n):
        p.produce(topic, VALUE, partition=0)
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "enable.auto.commit": False})
    got = 0
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while got < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
    finally:
        c.close()
    assert got == n
    return n * len(VALUE)


def test_fetch_and_principal_counters(gw):
    before = scrape(gw)
    assert sample(before, "rocketgate_principal_requests_total", protocol="kafka", principal="User:admin") == 0

    sasl_bytes = kafka_round_trip(kg.librdkafka(gw, kg.ADMIN, kg.ADMIN_PW, **{"allow.auto.create.topics": True}),
                                  "m-sasl", 5)
    # the LOCAL PLAINTEXT listener: no authentication, the anonymous principal (a super user's topic list is
    # not needed: the admin created the topic above and anonymous is allowed nothing else, so only requests
    # count here, not data)
    anonymous = KafkaProducer({"bootstrap.servers": f"127.0.0.1:{gw.plain_port}"})
    anonymous.list_topics(timeout=10)

    with Producer("pg-admin", gw.namesrv, access_key=AK, secret_key=SK) as prod:
        for i in range(4):
            prod.send(Message("m-native", VALUE, tags="t"))
    pulled = 0
    c = LitePullConsumer("cg-admin", gw.namesrv, access_key=AK, secret_key=SK, auto_commit=False,
                         consume_from=ConsumeFrom.FIRST_OFFSET)
    c.start()
    try:
        c.assign(c.fetch_queues("m-native"))
        deadline = time.monotonic() + 30
        while pulled < 4 and time.monotonic() < deadline:
            pulled += len(c.poll(1.0))
    finally:
        c.shutdown()
    assert pulled == 4

    after = scrape(gw)
    # Kafka Fetch: the record batches carry at least the values; one or more non-empty partition answers
    assert sample(after, "rocketgate_fetched_bytes_total", protocol="kafka", topic="m-sasl") >= sasl_bytes
    assert sample(after, "rocketgate_fetches_total", protocol="kafka", topic="m-sasl") >= 1
    # RocketMQ pulls: stored messages (bodies plus properties)
    assert sample(after, "rocketgate_fetched_bytes_total", protocol="remoting", topic="m-native") >= 4 * len(VALUE)
    assert sample(after, "rocketgate_fetches_total", protocol="remoting", topic="m-native") >= 1
    assert sample(after, "rocketgate_fetched_bytes_total", protocol="kafka", topic="m-native") == 0
    # requests per principal: SCRAM user, AccessKey mapped to its user, the anonymous listener
    for protocol in ("kafka", "remoting"):
        assert sample(after, "rocketgate_principal_requests_total", protocol=protocol, principal="User:admin") > 0
    assert sample(after, "rocketgate_principal_requests_total", protocol="kafka", principal="User:ANONYMOUS") > 0
    assert sample(after, "rocketgate_principal_requests_total", protocol="kafka", principal="User:alice") == 0
