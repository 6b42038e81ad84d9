"""kill -9 of a tiered gateway at exact points of local deletion, against the real S3 server: the
store's fault seam (store.faults, `die=POINT:N`) makes the process SIGKILL itself right after a
manifest is committed (before the gateway noted it, before any local delete), just before
retention's first unlink, and just after it (the first CommitLog file gone, the rest of the
deletion not done). After a restart: every acknowledged record is served once, in order, from the
tier below the local start and from the disk above it; the tier holds each queue offset in one
segment only and the remote-bytes metric counts each segment object once."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from store import faults
from tests.tier.test_tier_kafka import consume, create
from tests.tier.tier_gateway import TIERED, bucket_keys, list_offset, local_files, metrics, tier_gateway, wait_for

TOPIC = "k9del"


def produce_acked(gw, n: int, first: int = 0) -> tuple[list[bytes], list[bytes]]:
    """(sent, acknowledged) of `n` records; the gateway may die while they are sent."""
    sent = [b"%06d:" % i + b"x" * 1000 for i in range(first, first + n)]
    acked = []
    p = Producer({"bootstrap.servers": gw.kafka_bootstrap, "linger.ms": 5, "batch.size": 16384,
                  "message.timeout.ms": 8000, "enable.idempotence": False})

    def report(err, msg):
        if err is None:
            acked.append(msg.value())

    for i, v in enumerate(sent):
        p.produce(TOPIC, v, on_delivery=report)
        if i % 200 == 0:
            p.poll(0)
    p.flush(20)
    return sent, acked


def segment_ranges(seaweed_s3, bucket: str) -> list[tuple[int, int, str, int]]:
    """(first, end, key, size) of every segment of TOPIC the bucket's manifests list."""
    client = seaweed_s3.client()
    out = []
    for key in bucket_keys(seaweed_s3, bucket):
        if key.startswith("tier/manifests/"):
            doc = json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())
            out += [(s["first"], s["end"], s["key"], s["size"]) for s in doc["segments"] if s["topic"] == TOPIC]
    return sorted(out)


@pytest.mark.parametrize("point", ["commit:1", "unlink:1", "unlink:2"])
def test_kill9_at_a_point_of_local_deletion_loses_nothing_serves_nothing_twice(
        gateway_factory, seaweed_s3, s3_bucket, monkeypatch, point):
    monkeypatch.setenv(faults.ENV, f"die={point}")
    try:
        gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    finally:
        monkeypatch.delenv(faults.ENV)  # the restart below runs without the seam
    create(gw, TOPIC, TIERED)
    sent, acked = produce_acked(gw, 1500)
    assert gw.proc.wait(60) == -9, "the seam did not kill the gateway"
    gw.proc = None
    assert f"killing the process at {point.replace(':', ' #')}" in gw.log()
    files = local_files(gw)
    manifests = [k for k in bucket_keys(seaweed_s3, s3_bucket) if k.startswith("tier/manifests/")]
    assert manifests, "killed before any commit"
    if point == "unlink:2":
        assert files[0] > 0, "the first CommitLog file should be gone"
    else:
        assert files[0] == 0, "nothing should be deleted yet"
    assert len(acked) >= 300, "too few records acknowledged before the kill to mean anything"

    gw.start()
    more_sent, more = produce_acked(gw, 600, first=1500)  # the restarted gateway uploads and deletes on
    assert more == more_sent
    wait_for(lambda: (local_files(gw) or [0])[0] > max(files[0], 0), what="local deletion to go on")
    end = list_offset(gw, TOPIC, 0, -1)
    assert list_offset(gw, TOPIC, 0, -2) == 0 < list_offset(gw, TOPIC, 0, -4)  # the tier below the local start
    got = consume(gw, TOPIC, 0, end)
    assert len(got) == end and len(set(got)) == len(got), "a record served twice"
    got_set = set(got)
    assert [v for v in acked if v not in got_set] == [], "an acknowledged record lost"
    first_part = [v for v in got if v in set(sent)]
    assert first_part == sorted(first_part), "records out of order"
    assert got[-600:] == more

    def settled():
        """(segments, remote-bytes metric) once the uploads stopped: the two agree."""
        ranges = segment_ranges(seaweed_s3, s3_bucket)
        remote = metrics(gw)[("rocketgate_tier_remote_bytes", (("topic", TOPIC),))]
        return (ranges, remote) if remote == sum(size for _f, _e, _k, size in ranges) else None

    ranges, _remote = wait_for(settled, 30, "the remote-bytes metric to count each listed segment once")
    for (_f, end_a, key_a, _s), (first_b, _e, key_b, _s2) in zip(ranges, ranges[1:]):
        assert end_a <= first_b, f"two segments hold the same offsets: {key_a} {key_b}"
    stored = {k.removeprefix("tier/") for k in bucket_keys(seaweed_s3, s3_bucket)
              if k.startswith(f"tier/segments/{TOPIC}/")}
    assert {key for _f, _e, key, _s in ranges} <= stored
