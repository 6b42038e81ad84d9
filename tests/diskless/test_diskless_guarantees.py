"""The guarantees of diskless topics (docs/diskless.md, "Guarantees"), on real gateways, a real S3
server and real clients: a kill -9 mid-produce loses no acknowledged record; an unreachable object
store fails diskless produces fast with a retriable KAFKA_STORAGE_ERROR while plain topics keep
working, and nothing acknowledged is missing once it is back."""
from __future__ import annotations

import os
import threading
import time

import pytest
from confluent_kafka import KafkaError, Producer

from client import Message, MessageQueue, Producer as Producer_
from client.errors import MQBrokerError
from codec.remoting import ResponseCode

from acked_records import produce_acked, read_topic
from test_diskless_kafka import FAST_WAL, create_topic


def _produce_until(bootstrap: str, topic: str, stop: threading.Event, acked: list) -> None:
    """Keep producing (acks=all, no retries: a failure is final) until `stop`; acked values to `acked`."""
    # no telemetry push: librdkafka's destroy of this producer, after its broker was killed, hung in the
    # push (rdk:main blocked in rd_kafka_PushTelemetryRequest, the destroying thread joining it), and
    # that thread kept `make test-diskless` from exiting after "64 passed"
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, "retries": 0,
                         "message.timeout.ms": 10000, "reconnect.backoff.max.ms": 200,
                         "enable.metrics.push": False})

    def report(err, msg):
        if err is None:
            acked.append(msg.value())

    i = 0
    while not stop.is_set():
        producer.produce(topic, value=b"k-%d-" % i + os.urandom(16), on_delivery=report)
        producer.poll(0.001)
        i += 1
        if i % 200 == 0:
            producer.flush(5)
    producer.flush(12)


def test_kill_9_mid_produce_loses_no_acknowledged_record(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    create_topic(g.kafka_bootstrap, "k9", partitions=4)
    acked: list[bytes] = []
    stop = threading.Event()
    worker = threading.Thread(target=_produce_until, args=(g.kafka_bootstrap, "k9", stop, acked),
                              daemon=True)  # a client stuck past the join below never holds the run's exit
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 500 and time.monotonic() < deadline:  # well into the produce
            time.sleep(0.05)
        g.kill9()
    finally:
        stop.set()
        worker.join(30)
    assert len(acked) >= 500
    g.start()
    stored = read_topic(g.kafka_bootstrap, "k9")
    assert set(acked) <= set(stored), f"{len(set(acked) - set(stored))} acknowledged records lost"


def _send_one(bootstrap: str, topic: str) -> KafkaError | None:
    """One record, no retries; the delivery error (None: acknowledged)."""
    result = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0,
                         "enable.idempotence": False, "message.timeout.ms": 30000})
    producer.produce(topic, value=b"one", on_delivery=lambda err, _msg: result.append(err))
    producer.flush(35)
    return result[0]


def test_object_store_down_fails_diskless_produce_retriably_and_plain_topics_work(seaweed_factory,
                                                                                   gateway_factory):
    server = seaweed_factory()
    server.create_bucket("outage")
    g = gateway_factory(extra_args=server.tier_args("outage") + FAST_WAL)
    create_topic(g.kafka_bootstrap, "dl", partitions=2)
    create_topic(g.kafka_bootstrap, "plain", partitions=2, diskless=False)
    before = produce_acked(g.kafka_bootstrap, "dl", 100)
    server.stop()
    err = _send_one(g.kafka_bootstrap, "dl")
    # retriable in Kafka's protocol (KafkaStorageException is a RetriableException); with retries=0
    # librdkafka reports it as final, so the code is what is checked
    assert err is not None and err.code() == KafkaError.KAFKA_STORAGE_ERROR, err
    assert _send_one(g.kafka_bootstrap, "plain") is None  # the local CommitLog does not need the store
    with Producer_("outage-native", g.namesrv) as native:  # remoting: SYSTEM_BUSY, the retry-later class
        with pytest.raises(MQBrokerError) as busy:
            native.send(Message("dl", b"x"), queue=MessageQueue("dl", "broker-a", 0))
        assert busy.value.code == ResponseCode.SYSTEM_BUSY
        native.send(Message("plain", b"x"), queue=MessageQueue("plain", "broker-a", 0))
    assert len(produce_acked(g.kafka_bootstrap, "plain", 50)) == 50
    server.start()
    after = produce_acked(g.kafka_bootstrap, "dl", 100, prefix=b"after")
    assert sorted(read_topic(g.kafka_bootstrap, "dl")) == sorted(before + after)


def test_a_hung_object_store_fails_diskless_produce_within_its_timeout(seaweed_factory, gateway_factory):
    server = seaweed_factory()
    server.create_bucket("hung")
    g = gateway_factory(extra_args=server.tier_args("hung") + FAST_WAL + ["--diskless-request-timeout-ms", "1000"])
    create_topic(g.kafka_bootstrap, "dl", partitions=1)
    before = produce_acked(g.kafka_bootstrap, "dl", 20)
    server.pause()  # SIGSTOP: requests hang instead of being refused
    try:
        # librdkafka's message.timeout.ms (30 s) would end the send anyway: the answer must be the broker's
        err = _send_one(g.kafka_bootstrap, "dl")
        assert err is not None and err.code() == KafkaError.KAFKA_STORAGE_ERROR, err
    finally:
        server.resume()
    after = produce_acked(g.kafka_bootstrap, "dl", 20, prefix=b"after")
    assert set(before + after) <= set(read_topic(g.kafka_bootstrap, "dl"))
