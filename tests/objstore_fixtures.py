"""Fixtures of a real S3-compatible server (SeaweedFS, bench/objstore_server.py), registered for every
test directory by tests/conftest.py:

    seaweed_s3       one server for the whole session (start: a few seconds)
    s3_bucket        a new empty bucket on it, per test (its name)
    object_store     an S3ObjectStore on that bucket (prefix "t/"), the adapter the tier writes through
    seaweed_factory  private servers a test may stop, pause or restart (each reaped at the test's end)

A gateway subprocess reaches the server with `seaweed_s3.tier_args(bucket)` (--tier-url, --tier-endpoint,
--tier-credentials-file)."""
from __future__ import annotations

import shutil
import tempfile
import uuid

import pytest

from bench.objstore_server import SeaweedS3


def _short_tempdir(prefix: str) -> str:
    """Under /tmp: the server's unix sockets live in its work dir, and their paths must stay short."""
    return tempfile.mkdtemp(prefix=prefix, dir="/tmp")


def object_store_on(server: SeaweedS3, bucket: str, prefix: str = "t/", **options):
    """An S3ObjectStore on `bucket` of `server`, with its credentials and short timeouts for tests."""
    from store.objstore.s3 import S3ObjectStore
    defaults = dict(endpoint=server.endpoint, credentials_file=server.credentials_file,
                    connect_timeout=2.0, read_timeout=5.0, max_attempts=2)
    return S3ObjectStore.from_url(f"s3://{bucket}/{prefix}", **{**defaults, **options})


@pytest.fixture(scope="session")
def seaweed_s3():
    server = SeaweedS3(_short_tempdir("seaweed-"))
    try:
        yield server.start()
    finally:
        _discard(server)


@pytest.fixture
def s3_bucket(seaweed_s3) -> str:
    bucket = "t-" + uuid.uuid4().hex[:16]
    seaweed_s3.create_bucket(bucket)
    return bucket


@pytest.fixture
def object_store(seaweed_s3, s3_bucket):
    store = object_store_on(seaweed_s3, s3_bucket)
    yield store
    store.close()


@pytest.fixture
def seaweed_factory():
    started: list[SeaweedS3] = []

    def make(**kwargs) -> SeaweedS3:
        server = SeaweedS3(_short_tempdir("seaweed-"), **kwargs)
        started.append(server)
        return server.start()

    yield make
    for server in started:
        _discard(server)


def _discard(server: SeaweedS3) -> None:
    """SIGKILL (nothing of it is kept, so no graceful stop is waited for) and its files removed."""
    server.kill9()
    shutil.rmtree(server.workdir, ignore_errors=True)
