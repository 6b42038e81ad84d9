"""Fixtures for the Spark tests: one local SparkSession per module, a broker, kafka-python helpers.

The broker is a fresh gateway process per test (the `gateway` fixture). With SPARK_TEST_BROKER=kafka
the same tests run against a real Apache Kafka broker (bench/brokers.py, one per module), which is
how the tests themselves are checked; SPARK_TEST_BOOTSTRAP=HOST:PORT (and SPARK_TEST_NAMESRV) use a
gateway that is already running.
"""
from __future__ import annotations

import os
import uuid

import pytest
from spark_helpers import AGAINST_KAFKA, EXTERNAL



def pytest_configure(config):
    config.addinivalue_line("markers", "spark: starts a local Spark (JVM); slow")


def pytest_collection_modifyitems(items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="module")
def spark():
    from spark import session

    s = session.build("rocketgate-tests")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def kafka_broker(tmp_path_factory):
    if not AGAINST_KAFKA:
        yield None
        return
    from bench.brokers import KafkaBroker

    with KafkaBroker(str(tmp_path_factory.mktemp("kafka")), heap="768m") as k:
        yield k


@pytest.fixture
def bootstrap(request, kafka_broker) -> str:
    if EXTERNAL:
        return EXTERNAL
    if kafka_broker is not None:
        return kafka_broker.bootstrap
    return request.getfixturevalue("gateway").kafka_bootstrap


@pytest.fixture
def namesrv(request, kafka_broker) -> str | None:
    """The gateway's RocketMQ address (None against Apache Kafka, which has no native side)."""
    if EXTERNAL:
        return os.environ.get("SPARK_TEST_NAMESRV")
    if kafka_broker is not None:
        return None
    return request.getfixturevalue("gateway").namesrv


@pytest.fixture
def topic_name():
    """Unique topic names (the Kafka broker is shared by a module's tests)."""
    def make(prefix: str = "t") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"
    return make
