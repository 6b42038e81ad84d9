"""One janitor per bucket (docs/diskless.md, "One janitor per bucket"): two real gateways on one
SeaweedFS bucket, both with a busy janitor schedule; only the lease holder compacts (the other's
passes do nothing), and after the holder is killed (kill -9) the other takes the lease and compacts
the WAL objects written since. Every acknowledged record is read back through a real consumer."""
from __future__ import annotations

import os
import sys

from confluent_kafka.admin import AdminClient

from acked_records import produce_acked, read_topic
from test_diskless_janitor import BUSY_JANITOR, _keys
from test_diskless_kafka import create_topic
from test_diskless_paused_leader import _entries

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cluster"))
from clusters import wait_for  # noqa: E402

PASS_LINE = "diskless janitor (term "


def _passes(g) -> list[str]:
    """The gateway's log lines of janitor passes that did work."""
    with open(g.log_path, errors="replace") as f:
        return [line for line in f if PASS_LINE in line]


def _small_wal_objects(bootstrap: str, rounds: int, prefix: bytes) -> list[bytes]:
    acked = []
    for n in range(rounds):  # one WAL object each: a compaction has runs to move
        acked += produce_acked(bootstrap, "one", 10, prefix=prefix + b"%d" % n)
    return acked


def test_only_the_lease_holder_compacts_and_another_takes_over(seaweed_s3, s3_bucket, gateway_factory):
    args = seaweed_s3.tier_args(s3_bucket) + BUSY_JANITOR
    gws = [gateway_factory(extra_args=args, name=f"g{i}") for i in (1, 2)]
    create_topic(gws[0].kafka_bootstrap, "one", partitions=1)
    for g in gws:  # adopted from the bucket by the other gateway (a Metadata naming it would auto-create it)
        admin = AdminClient({"bootstrap.servers": g.kafka_bootstrap})
        wait_for(lambda: "one" in admin.list_topics(timeout=10).topics, 30, "the topic on both gateways")
    acked = []
    for wave in range(3):  # three compactions while both gateways run a pass every 200 ms
        segments = set(_keys(seaweed_s3, s3_bucket, "segments"))
        acked += _small_wal_objects(gws[wave % 2].kafka_bootstrap, 6, b"a%d-" % wave)
        wait_for(lambda: set(_keys(seaweed_s3, s3_bucket, "segments")) - segments, 60, "a compaction")
    working = [g for g in gws if _passes(g)]
    assert len(working) == 1, [_passes(g) for g in gws]  # the other gateway's passes did nothing
    holder = working[0]
    other = next(g for g in gws if g is not holder)
    segments = set(_keys(seaweed_s3, s3_bucket, "segments"))
    holder.kill9()
    acked += _small_wal_objects(other.kafka_bootstrap, 6, b"b")
    wait_for(lambda: _passes(other) and set(_keys(seaweed_s3, s3_bucket, "segments")) - segments, 60,
             "the other gateway to take the lease and compact")
    assert "term 1)" in "".join(_passes(other))  # a new term: it took over, not shared
    got = read_topic(other.kafka_bootstrap, "one")
    assert sorted(got) == sorted(acked) and len(got) == len(set(got)), (len(got), _entries(seaweed_s3, s3_bucket))
