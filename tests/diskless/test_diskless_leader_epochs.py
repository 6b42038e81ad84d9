"""OffsetForLeaderEpoch on a diskless partition (gateway/kafka/leader_epochs.py): the current epoch
ends at the index's end, as a Kafka broker's one epoch ends at its log end
(tests/kafka/test_offset_for_leader_epoch.py, run against Kafka 4.3.1). The gateway answered from its
local epoch table, whose log is empty for a diskless queue: end 0, so a consumer validating its
position after a leader change saw a truncated log and went back to offset 0 (the fault harness's
diskless workload read partitions up to five times over: docs/faults-diskless.md)."""
from __future__ import annotations

import os
import sys

from codec.kafka import records
from test_diskless_kafka import FAST_WAL, create_topic

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kafka"))
from kafka_raw import RawClient, produce_body, produce_error  # noqa: E402

PRODUCE, OFFSET_FOR_LEADER_EPOCH = 0, 23


def _ask(client, topic: str, leader_epoch: int, current: int = -1) -> tuple:
    resp = client.call(OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": current,
                                         "leader_epoch": leader_epoch}]}]})
    p = resp["topics"][0]["partitions"][0]
    return p["error_code"], p["leader_epoch"], p["end_offset"]


def test_the_epoch_of_a_diskless_partition_ends_at_the_index_end(seaweed_s3, s3_bucket, gateway_factory):
    g = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL)
    create_topic(g.kafka_bootstrap, "dlofle", partitions=1)
    client = RawClient(g.kafka_bootstrap, timeout=30)
    try:
        assert _ask(client, "dlofle", 0) == (0, 0, 0)
        batch = records.build_batch([(1000 + i, None, b"v", []) for i in range(3)], base_timestamp=1000)
        assert produce_error(client.call(PRODUCE, 9, produce_body("dlofle", 0, batch))) == (0, 0)
        assert _ask(client, "dlofle", 0) == (0, 0, 3)  # was (0, 0, 0): the empty local log's end
        assert _ask(client, "dlofle", 0, current=0) == (0, 0, 3)
        assert _ask(client, "dlofle", 7) == (0, -1, -1)  # a later epoch than any, as Kafka
        assert _ask(client, "dlofle", -1) == (0, -1, -1)
    finally:
        client.close()
