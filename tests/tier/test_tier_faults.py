"""Faults of the object store, each against the real S3 server: down for a while, an object
corrupted remotely, kill -9 of the gateway during uploads, the bucket wiped."""
from __future__ import annotations

import time

import metrics_page
from tests.tier.test_tier_kafka import N, consume, create, produce
from tests.tier.tier_gateway import TIERED, bucket_keys, list_offset, local_files, metrics, tier_gateway, wait_for, \
    wait_local_deleted


def test_store_down_uploads_wait_nothing_deleted_then_catch_up(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "down", TIERED)
    seaweed_s3.pause()
    try:
        values = produce(gw, "down")  # produce does not wait for the object store
        time.sleep(4)  # several upload rounds fail meanwhile
        assert local_files(gw)[0] == 0  # nothing uncommitted is deleted
        assert consume(gw, "down", 0, N) == values  # local data still served
    finally:
        seaweed_s3.resume()
    wait_local_deleted(gw)
    assert consume(gw, "down", 0, N) == values


def test_corrupt_object_is_not_served_the_rest_is(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "a", TIERED)
    create(gw, "b", TIERED)
    a, b = produce(gw, "a"), produce(gw, "b")
    wait_for(lambda: list_offset(gw, "b", 0, -4) > 0, what="b's first files deleted locally")
    segments = sorted(k for k in bucket_keys(seaweed_s3, s3_bucket) if k.startswith("tier/segments/a/0/"))
    victim, after = segments[0], segments[1]
    end = int(after.rsplit("-", 1)[1].split(".")[0])
    client = seaweed_s3.client()
    data = client.get_object(Bucket=s3_bucket, Key=victim)["Body"].read()
    client.put_object(Bucket=s3_bucket, Key=victim, Body=data[: len(data) // 2])  # truncated remotely
    assert consume(gw, "a", 0, N - end) == a[end:]  # the damaged segment's records are skipped
    assert consume(gw, "b", 0, N) == b
    assert "checksum" in gw.log()
    seen = metrics(gw)
    assert seen[("rocketgate_tier_errors_total", (("kind", "checksum"),))] >= 1
    assert seen[("rocketgate_tier_uploaded_bytes_total", (("topic", "b"),))] > 0
    assert seen[("rocketgate_tier_remote_bytes", (("topic", "a"),))] > 0
    assert seen[("rocketgate_tier_local_bytes", (("topic", "b"),))] > 0  # b's tail is in the open file
    assert ("rocketgate_tier_upload_lag_files", ()) in seen
    assert metrics_page.dashboard_metrics("rocketgate_tier_") <= {name for name, _labels in seen}  # its tier panels


def test_kill9_during_uploads_loses_nothing_serves_nothing_twice(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "k9", TIERED)
    values = produce(gw, "k9")
    gw.kill9()  # uploads (and local deletions) in flight
    gw.start()
    values += produce(gw, "k9", 300)
    time.sleep(1.5)
    gw.kill9()
    gw.start()
    wait_local_deleted(gw)
    assert list_offset(gw, "k9", 0, -1) == len(values)
    assert consume(gw, "k9", 0, len(values)) == values


def test_bucket_wiped_clear_errors_local_data_served(gateway_factory, seaweed_s3, s3_bucket):
    gw = tier_gateway(gateway_factory, seaweed_s3, s3_bucket)
    create(gw, "wiped", TIERED)
    values = produce(gw, "wiped")
    wait_for(lambda: len(local_files(gw)) == 1, what="every sealed file uploaded and deleted locally")
    local = list_offset(gw, "wiped", 0, -4)
    client = seaweed_s3.client()
    for key in bucket_keys(seaweed_s3, s3_bucket):
        client.delete_object(Bucket=s3_bucket, Key=key)
    assert consume(gw, "wiped", local, N) == values[local:]
    assert consume(gw, "wiped", 0, N - local) == values[local:]  # the lost part is skipped, the rest served
    assert "missing from the object store" in gw.log()
    produce(gw, "wiped", 600)  # uploads go on into the emptied bucket
    wait_for(lambda: any(k.startswith("tier/manifests/") for k in bucket_keys(seaweed_s3, s3_bucket)),
             what="a new manifest")
