"""KIP-932 share groups on a diskless topic (docs/diskless.md, "Share groups"), with the stock
KafkaShareConsumer (kafka-clients 4.x, compat.KafkaShare) the share-group tests use: the records come
from the bucket's WAL objects, the leases are the pop engine's as on any topic. The same scenarios on
a plain topic pass against Apache Kafka 4.3.1 (tests/kafka/test_share_groups.py, SHARE_REFERENCE=kafka)."""
from __future__ import annotations

import os
import sys
import uuid

import pytest

from test_diskless_kafka import FAST_WAL, create_topic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kafka"))  # the share helpers
from test_share_groups import share, share_classpath  # noqa: E402,F401 - share_classpath is a fixture

pytestmark = pytest.mark.timeout(300)


def test_share_consumers_read_a_diskless_topic(seaweed_s3, s3_bucket, gateway_factory, share_classpath):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    topic, group = f"dlshare-{uuid.uuid4().hex[:6]}", f"sg-{uuid.uuid4().hex[:6]}"
    create_topic(g.kafka_bootstrap, topic, partitions=1)
    share(share_classpath, g.kafka_bootstrap, topic, group, "produce", 200, "m")
    share(share_classpath, g.kafka_bootstrap, topic, group, "config", "share.auto.offset.reset=earliest")
    r = share(share_classpath, g.kafka_bootstrap, topic, group, "share", 2, 200, "explicit")
    assert r["distinct"] == 200
    assert r["deliveries"] == 200  # nothing twice: every record acknowledged within its lock
    # released records are delivered again at once
    topic2, group2 = f"dlshare-{uuid.uuid4().hex[:6]}", f"sg-{uuid.uuid4().hex[:6]}"
    create_topic(g.kafka_bootstrap, topic2, partitions=1)
    share(share_classpath, g.kafka_bootstrap, topic2, group2, "produce", 10, "r")
    share(share_classpath, g.kafka_bootstrap, topic2, group2, "config", "share.auto.offset.reset=earliest")
    counts = share(share_classpath, g.kafka_bootstrap, topic2, group2, "release", 10)["counts"]
    assert counts == {f"r{i}": [1, 2] for i in range(10)}
