"""The broker a Kafka conformance test talks to: a fresh gateway, or a real Apache Kafka 4.x.

Every conformance test is first run against real Kafka (a `bench.brokers.KafkaBroker`, started from
bench/jars) by pointing KAFKA_REFERENCE_BOOTSTRAP=host:port at it, so a failure against the gateway
is the gateway's bug. Tests of what only the gateway does are marked `gateway_only`.
"""
from __future__ import annotations

import os
import time
import uuid

import pytest
from gateway_process import GatewayProcess
from kafka_raw import RawClient

REFERENCE = os.environ.get("KAFKA_REFERENCE_BOOTSTRAP")
gateway_only = pytest.mark.skipif(REFERENCE is not None, reason="behaviour of the gateway only")


class Target:
    def __init__(self, bootstrap: str, gateway: GatewayProcess | None) -> None:
        self.bootstrap = bootstrap
        self.gateway = gateway  # None against the reference Kafka

    def raw(self) -> RawClient:
        return RawClient(self.bootstrap, timeout=60)

    def raw_coordinator(self, group: str) -> RawClient:
        """A raw client at `group`'s coordinator (FindCoordinator, as a Kafka client asks it): the
        bootstrap with one broker; under `--shards` or on a cluster the broker the group hashes to."""
        client = self.raw()
        try:
            found = client.call(10, 4, {"key_type": 0, "coordinator_keys": [group]})["coordinators"][0]
        finally:
            client.close()
        if found["error_code"] != 0:  # a fresh Kafka may still be loading its coordinator: the bootstrap
            return self.raw()
        return RawClient(f"{found['host']}:{found['port']}", timeout=60)


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    if REFERENCE:
        yield Target(REFERENCE, None)
        return
    g = GatewayProcess(str(tmp_path_factory.mktemp("target") / "data")).start()
    yield Target(g.kafka_bootstrap, g)
    g.stop()


@pytest.fixture(scope="module")
def admin(target):
    """kafka-python's admin client on the target, for the module."""
    from kafka.admin import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=target.bootstrap)
    yield a
    a.close()


def new_topic(admin, prefix: str, configs: dict | None = None) -> str:
    """A fresh single-partition topic named `prefix`-<random>, with `configs`."""
    from kafka.admin import NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(name, 1, 1, topic_configs=configs or {})])
    return name


def eventually(fn, timeout: float = 15.0):
    """fn() once it stops raising (Kafka applies a new topic's metadata asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:  # noqa: BLE001 - retried until the deadline, then raised
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def first_record(bootstrap: str, topic: str, group: str, timeout: float = 60.0):
    """The first record polled from partition 0 of `topic` within `timeout` (None when none came):
    how the delay tests wait for a record that appears only once it falls due."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.assign([TopicPartition(topic, 0, 0)])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                return m
        return None
    finally:
        c.close()
