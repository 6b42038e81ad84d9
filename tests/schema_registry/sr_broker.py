"""The Kafka side for the registry client tests: the registry gateway's own Kafka port, or with
SR_TEST_BROKER=kafka a real Apache Kafka broker (bench/brokers.py) while the registry stays on the
gateway, which is how the tests' produce/consume expectations were checked against the real thing."""
from __future__ import annotations

import os

import pytest

AGAINST_KAFKA = os.environ.get("SR_TEST_BROKER") == "kafka"


@pytest.fixture
def client_bootstrap(registry_gateway, tmp_path):
    if not AGAINST_KAFKA:
        yield registry_gateway.gateway.kafka_bootstrap
        return
    from bench.brokers import KafkaBroker

    with KafkaBroker(str(tmp_path / "kafka"), heap="768m") as kafka:
        yield kafka.bootstrap
