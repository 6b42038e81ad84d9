"""The tier's two bounds are flags and take effect: --remote-log-manager-copy-max-bytes-per-second
(Kafka's remote.log.manager.copy.max.bytes.per.second) caps what the uploads send, and
--tier-read-cache-bytes caps the on-disk read cache while a consumer reads the whole tier."""
from __future__ import annotations

import time

from tests.tier.test_tier_kafka import N, consume, create, produce
from tests.tier.tier_gateway import TIERED, list_offset, metrics, tier_gateway, wait_for

RATE = 256 << 10
CACHE = 600 << 10  # two of this test's segments (one 256 KiB file's worth each), not all of them


def test_upload_bandwidth_and_read_cache_size_flags(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket, extra=[
        "--remote-log-manager-copy-max-bytes-per-second", str(RATE), "--tier-read-cache-bytes", str(CACHE)])
    create(gw, "capped", TIERED)
    began = time.monotonic()  # no file is sealed, so nothing uploaded, before this
    values = produce(gw, "capped")

    def uploaded_within_the_cap():
        seen = metrics(gw)
        sent = seen.get(("rocketgate_tier_uploaded_bytes_total", (("topic", "capped"),)), 0)
        # a token bucket one second deep: by any time, at most RATE x (seconds since the first byte + 1)
        assert sent <= RATE * (time.monotonic() - began + 1), (sent, time.monotonic() - began)
        return sent > 0 and seen[("rocketgate_tier_upload_lag_files", ())] == 0 and sent
    sent = wait_for(uploaded_within_the_cap, what="every sealed file uploaded")
    assert sent > 2 * RATE  # several seconds' worth: the bound above was really exercised
    local = wait_for(lambda: list_offset(gw, "capped", 0, -4), what="the uploaded files deleted locally")
    assert consume(gw, "capped", 0, local) == values[:local]  # all of it read through the small cache
    seen = metrics(gw)
    remote = seen[("rocketgate_tier_remote_bytes", (("topic", "capped"),))]
    assert seen[("rocketgate_tier_remote_read_bytes_total", (("topic", "capped"),))] >= remote > CACHE
    assert 0 < seen[("rocketgate_tier_read_cache_bytes", ())] <= CACHE
    assert local < N
