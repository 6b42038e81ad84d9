"""A tiered gateway without diskless topics leaves the bucket's diskless state alone (docs/diskless.md,
"Idle without diskless topics"): no POP lease, no janitor pass, only the topic watch's LIST of the
topic records (how it learns of a topic created at another gateway). A diskless topic created at
another gateway of the bucket then works here at once, and the POP lease wakes. The watch asks one HEAD
of the marker every gateway rewrites after a topic-record change every 2 s, not a LIST of the records
(gateway.diskless.TopicWatch). Requests are
counted at an HTTP proxy (tests/s3_refusing_proxy.py, refusing nothing) in front of the real
SeaweedFS server."""
from __future__ import annotations

import time
import urllib.parse

from confluent_kafka.admin import AdminClient

from acked_records import produce_acked, read_topic
from s3_refusing_proxy import RefusingProxy
from test_diskless_kafka import FAST_WAL, create_topic


def _diskless(proxy, since: int) -> list[tuple[str, str]]:
    """The requests about diskless state (object keys or list prefixes under diskless/), from `since` on."""
    return [(m, urllib.parse.unquote(p)) for m, p in proxy.seen[since:] if "diskless" in urllib.parse.unquote(p)]


def _args(seaweed_s3, bucket: str, endpoint: str) -> list[str]:
    args = seaweed_s3.tier_args(bucket) + FAST_WAL
    args[args.index("--tier-endpoint") + 1] = endpoint
    return args


def test_no_diskless_topic_no_diskless_requests_then_one_works_at_once(seaweed_s3, s3_bucket, gateway_factory):
    with RefusingProxy(seaweed_s3.endpoint) as proxy:
        idle = gateway_factory(extra_args=_args(seaweed_s3, s3_bucket, proxy.endpoint), name="idle")
        other = gateway_factory(extra_args=seaweed_s3.tier_args(s3_bucket) + FAST_WAL, name="other")
        since = len(proxy.seen)
        time.sleep(7)
        # only the topic watch's HEAD of the topic-change marker (every 2 s): no lease, no janitor, no
        # write, and no LIST of the topic records but a first one (before: a LIST every 2 s, 3 or 4 here)
        seen = _diskless(proxy, since)
        lists = [r for r in seen if r[0] == "GET" and "prefix=tier/diskless/topics/" in r[1]]
        heads = [r for r in seen if r[0] == "HEAD" and r[1].endswith("/diskless/topics-changed")]
        others = [r for r in seen if r not in lists and r not in heads]
        assert not others, (len(others), others[:6])
        assert len(lists) <= 1 and len(heads) >= 2, (len(lists), len(heads))
        create_topic(other.kafka_bootstrap, "woke", partitions=2)  # at the other gateway of the bucket
        admin = AdminClient({"bootstrap.servers": idle.kafka_bootstrap})
        deadline = time.monotonic() + 20
        while "woke" not in admin.list_topics(timeout=10).topics:  # adopted by the watch (not auto-created)
            assert time.monotonic() < deadline, "the topic created at the other gateway never came"
            time.sleep(0.2)
        acked = produce_acked(idle.kafka_bootstrap, "woke", 50)
        assert sorted(read_topic(idle.kafka_bootstrap, "woke")) == sorted(acked)
        assert sorted(read_topic(other.kafka_bootstrap, "woke")) == sorted(acked)
        deadline = time.monotonic() + 10
        while not any("diskless/pop/" in t for _, t in _diskless(proxy, since)):  # the POP lease woke
            assert time.monotonic() < deadline, "the POP lease never woke"
            time.sleep(0.2)
