"""Helpers of the tier's end-to-end tests: a gateway on the real S3 server (tests/objstore_fixtures.py)
with small CommitLog files so they seal fast, and what its data dir and bucket hold."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "kafka"))
import metrics_page  # noqa: E402
import waiting  # noqa: E402
from gateway_process import free_port  # noqa: E402
from kafka_raw import RawClient  # noqa: E402

LIST_OFFSETS = 2

FILE_SIZE = "256k"
TIERED = {"remote.storage.enable": "true", "local.retention.ms": "1000"}


def tier_gateway(gateway_factory, seaweed_s3, bucket: str, name: str = "data", extra=()):
    """A gateway on the tier, with small CommitLog files and its /metrics on `gw.http`."""
    http = free_port()
    gw = gateway_factory(extra_args=["--commitlog-file-size", FILE_SIZE, "--http-port", str(http),
                                     *seaweed_s3.tier_args(bucket), *extra], name=name)
    gw.http = f"127.0.0.1:{http}"
    return gw


def metrics(gw) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of the gateway's /metrics."""
    return metrics_page.scrape(gw.http)


def local_files(gw) -> list[int]:
    """Starts of the CommitLog files on the gateway's disk."""
    d = os.path.join(gw.data_dir, "commitlog")
    return sorted(int(n) for n in os.listdir(d) if n.isdigit()) if os.path.isdir(d) else []


def wait_for(check, timeout: float = 90.0, what: str = "condition"):
    return waiting.wait_for(check, timeout, what, interval=0.25)


def wait_local_deleted(gw, timeout: float = 90.0) -> int:
    """Until the first CommitLog file went from the disk (uploaded, then deleted); the new first."""
    return wait_for(lambda: (local_files(gw) or [0])[0], timeout, "local CommitLog files to be deleted")


def list_offset(gw, topic: str, partition: int, ts: int, version: int = 9) -> int:
    c = RawClient(gw.kafka_bootstrap, timeout=30)
    try:
        body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 5000,
                "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": ts}]}]}
        p = c.call(LIST_OFFSETS, version, body)["topics"][0]["partitions"][0]
        assert p["error_code"] == 0, p
        return p["offset"]
    finally:
        c.close()


def bucket_keys(seaweed_s3, bucket: str) -> list[str]:
    return seaweed_s3.keys(bucket)
