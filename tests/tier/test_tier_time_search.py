"""A search by record time on a tiered topic reads only the segment holding the time: each segment's
largest record timestamp is in its manifest (version 2), so ListOffsets by timestamp (what
offsetsForTimes and `kafka-consumer-groups --to-datetime` send) goes straight to that segment. The
object GETs are counted at a proxy in front of the real S3 server. Before, a search read every
segment from an hour (message.timestamp.after.max.ms) before the time: here, all of them."""
from __future__ import annotations

import time
import urllib.parse

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from s3_refusing_proxy import RefusingProxy
from tests.tier.tier_gateway import TIERED, list_offset, tier_gateway, wait_for

pytestmark = pytest.mark.timeout(240)
TOPIC = "ts-search"
N = 1200
STEP_MS = 1000


def segment_gets(proxy: RefusingProxy, since: int) -> set[str]:
    """The segment objects GET since request `since` (ranged or not)."""
    return {urllib.parse.unquote(path.split("?")[0]) for method, path in proxy.seen[since:]
            if method == "GET" and "/segments/" in path}


def first_offset(path: str) -> int:
    """The first offset of a segment object by its key (store.tier.manifest.segment_key)."""
    return int(path.rsplit("-", 1)[1].split(".")[0])


def test_list_offsets_by_time_reads_only_the_segment_holding_the_time(gateway_factory, seaweed_s3, s3_bucket):
    base = int(time.time() * 1000) - 2 * 3600_000  # record times of two hours ago, stored now
    with RefusingProxy(seaweed_s3.endpoint) as proxy:
        args = seaweed_s3.tier_args(s3_bucket)
        args[args.index("--tier-endpoint") + 1] = proxy.endpoint
        gw = gateway_factory(extra_args=["--commitlog-file-size", "256k", *args], name="data")
        admin = AdminClient({"bootstrap.servers": gw.kafka_bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=TIERED)])[TOPIC].result(30)
        p = Producer({"bootstrap.servers": gw.kafka_bootstrap, "linger.ms": 5, "batch.size": 16384})
        for i in range(N):
            p.produce(TOPIC, b"%05d|" % i + b"x" * 1000, timestamp=base + i * STEP_MS)
            p.poll(0)
        assert p.flush(30) == 0
        wait_for(lambda: list_offset(gw, TOPIC, 0, -4) > 800, what="the files of the first 800 records deleted locally")
        assert list_offset(gw, TOPIC, 0, -2) == 0
        segments = {path for method, path in proxy.seen if method == "PUT" and "/segments/" in path}
        assert len(segments) >= 3
        for target in (700, 200):
            since = len(proxy.seen)
            assert list_offset(gw, TOPIC, 0, base + target * STEP_MS - 1) == target
            read = sorted(segment_gets(proxy, since))
            firsts = [first_offset(path) for path in read]
            holding = max(f for f in map(first_offset, segments) if f <= target)
            # the segment holding the time, and at most the next one's index (read ahead, as a
            # reader that reaches a segment's end does): none of the segments before it
            assert firsts[0] == holding and len(read) <= 2, (target, read, sorted(segments))
        since = len(proxy.seen)  # a time after every tiered record: answered from the local part
        assert list_offset(gw, TOPIC, 0, base + N * STEP_MS) == -1
        assert segment_gets(proxy, since) == set()
