"""A leader answers a follower's fetch below its local start from its tier (docs/tiered-storage.md,
"Disk loss"): the REPLICA_FETCH answer waits, off the event loop, for the segment's download
(gateway.tier_reads, up to the fetch's max wait) and carries the entries. Before, a read-cache miss
answered an empty body at once, and a catching-up follower asked again and again until the
download had ended."""
from __future__ import annotations

from gateway.remoting.replica_fetch import fetch_answer, fetch_command
from semantics.replication import FetchRequest
from semantics.replication.contract import NONE
from tests.replication.replicas import remoting, set_role
from tests.tier.test_tier_kafka import create, produce
from tests.tier.tier_gateway import TIERED, list_offset, tier_gateway, wait_local_deleted

FOLLOWER = "127.0.0.1:1"  # a replica that never fetches by itself: the test fetches in its name


def test_a_replica_fetch_below_the_local_start_is_answered_from_the_tier(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "cold", TIERED)
    values = produce(gw, "cold")
    wait_local_deleted(gw)
    assert list_offset(gw, "cold", 0, -4) > 0  # offset 0 is in the tier only; nothing of it is cached
    assert set_role(gw, "cold", "leader", 1, replicas=[FOLLOWER], isr=[]).code == 0
    request = FetchRequest("cold", 0, 0, 1, FOLLOWER, 1 << 20, 5000, 0)
    answer = fetch_answer(remoting(gw, fetch_command(request).code, fetch_command(request).ext_fields))
    assert answer.error == NONE and answer.entries, answer
    assert answer.entries[0].queue_offset == 0 and values[0] in answer.entries[0].body
