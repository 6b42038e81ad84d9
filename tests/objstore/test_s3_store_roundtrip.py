"""The S3 adapter (store/objstore/s3.py) against a real SeaweedFS server: every call of the contract
(store/objstore/api.py) round trips, and the two answers the tier builds on: a conditional PUT that
loses is PreconditionFailed, an absent key is NotFound."""
from __future__ import annotations

import base64
import hashlib
import os

import pytest
from crc32c import crc32c

from objstore_fixtures import object_store_on
from store.objstore.api import NotFound, ObjectStore, ObjectStoreError, PreconditionFailed
from store.tier.payload import Parts


def test_put_get_head_delete_round_trip(object_store):
    assert isinstance(object_store, ObjectStore)
    data = os.urandom(100_000)
    etag = object_store.put("seg/00000000000000000000", data)
    assert etag and '"' not in etag
    assert object_store.get("seg/00000000000000000000") == data
    info = object_store.head("seg/00000000000000000000")
    assert (info.key, info.size, info.etag) == ("seg/00000000000000000000", len(data), etag)
    object_store.delete("seg/00000000000000000000")
    assert object_store.head("seg/00000000000000000000") is None
    object_store.delete("seg/00000000000000000000")  # absent: not an error


def test_ranged_get(object_store):
    data = bytes(range(256)) * 64
    object_store.put("r", data)
    assert object_store.get("r", 10, 20) == data[10:20]
    assert object_store.get("r", 16000) == data[16000:]
    assert object_store.get("r", 0, 1) == data[:1]
    assert object_store.get("r", 5, 5) == b""
    assert object_store.get("r", len(data) - 3, len(data) + 100) == data[-3:]  # an end past the object
    assert object_store.get("r", len(data)) == b""  # a start at the end: nothing, as a file read
    with pytest.raises(ValueError):
        object_store.get("r", 20, 10)


def test_a_large_object_survives_whole(object_store):
    data = os.urandom(9 * 1024 * 1024 + 7)  # more than the server's 4 MiB chunks
    object_store.put("big", data)
    assert object_store.get("big") == data
    assert object_store.get("big", 4 * 1024 * 1024 - 5, 4 * 1024 * 1024 + 5) == data[4 * 1024 * 1024 - 5:][:10]


def test_list_in_key_order_relative_to_the_prefix(object_store, seaweed_s3, s3_bucket):
    for key in ["b/2", "a/1", "b/10", "c"]:
        object_store.put(key, key.encode())
    object_store_on(seaweed_s3, s3_bucket, prefix="other/").put("a/x", b"not ours")
    assert [(i.key, i.size) for i in object_store.list()] == [("a/1", 3), ("b/10", 4), ("b/2", 3), ("c", 1)]
    assert [i.key for i in object_store.list("b/")] == ["b/10", "b/2"]
    assert list(object_store.list("zzz")) == []


def test_list_pages_through_more_than_one_answer(object_store, seaweed_s3, s3_bucket):
    """S3 answers at most 1000 keys a page: the listing follows the continuation tokens."""
    keys = [f"k/{i:05d}" for i in range(1005)]
    for key in keys:
        object_store.put(key, b"")
    assert seaweed_s3.client().list_objects_v2(Bucket=s3_bucket, Prefix="t/k/")["IsTruncated"]  # two pages
    assert [i.key for i in object_store.list("k/")] == keys


def test_put_if_absent_loses_to_an_existing_key(object_store):
    object_store.put("manifest/1", b"first", if_absent=True)
    with pytest.raises(PreconditionFailed):
        object_store.put("manifest/1", b"second", if_absent=True)
    assert object_store.get("manifest/1") == b"first"
    object_store.put("manifest/1", b"overwritten")  # unconditional: replaces
    assert object_store.get("manifest/1") == b"overwritten"


def test_missing_key_and_missing_bucket_are_not_found(object_store, seaweed_s3):
    with pytest.raises(NotFound):
        object_store.get("nothing")
    with pytest.raises(NotFound):
        object_store.get("nothing", 5, 10)
    assert object_store.head("nothing") is None
    gone = object_store_on(seaweed_s3, "no-such-bucket-here")
    with pytest.raises(NotFound):
        gone.get("x")
    with pytest.raises(NotFound):
        list(gone.list())
    assert gone.head("x") is None


def test_a_put_carries_one_sha256_and_the_server_checks_the_body_against_it(object_store):
    """The body is hashed once, by the caller: x-amz-checksum-sha256, UNSIGNED-PAYLOAD also over
    plain HTTP (no SigV4 payload hash), no Content-MD5; a body that does not match is refused."""
    sent = []
    object_store._client.meta.events.register("before-send.s3.PutObject",
                                              lambda request, **_: sent.append(dict(request.headers)))
    data = os.urandom(300_000)
    digest = hashlib.sha256(data).digest()
    object_store.put("ok", data, sha256=digest)
    headers = {k.lower(): v for k, v in sent[-1].items()}
    assert headers["x-amz-checksum-sha256"] == base64.b64encode(digest)
    assert headers["x-amz-content-sha256"] == b"UNSIGNED-PAYLOAD"
    assert "content-md5" not in headers
    assert object_store.get("ok") == data
    object_store.put("computed", b"small")  # no digest given: the adapter computes it
    assert {k.lower(): v for k, v in sent[-1].items()}["x-amz-checksum-sha256"] == \
        base64.b64encode(hashlib.sha256(b"small").digest())
    with pytest.raises(ObjectStoreError) as refused:  # e.g. corrupted between hashing and sending
        object_store.put("bad", data, sha256=hashlib.sha256(b"other").digest())
    assert type(refused.value) is ObjectStoreError and "BadDigest" in str(refused.value)
    assert object_store.head("bad") is None


def test_a_put_of_views_carries_its_crc32c_and_the_server_checks_the_body_against_it(object_store):
    """The tier's segments: a body of views of the file's bytes (never joined), x-amz-checksum-crc32c
    the server verifies; a body that does not match its CRC32C is refused (BadDigest), not stored."""
    sent = []
    object_store._client.meta.events.register("before-send.s3.PutObject",
                                              lambda request, **_: sent.append(dict(request.headers)))
    data = os.urandom(300_000)
    whole = crc32c(data)
    object_store.put("views", Parts([data[:100_000], memoryview(data)[100_000:]]), crc32c=whole)
    headers = {k.lower(): v for k, v in sent[-1].items()}
    assert headers["x-amz-checksum-crc32c"] == base64.b64encode(whole.to_bytes(4, "big"))
    assert "x-amz-checksum-sha256" not in headers and headers["x-amz-content-sha256"] == b"UNSIGNED-PAYLOAD"
    assert object_store.get("views") == data
    damaged = bytes([data[0] ^ 1]) + data[1:]  # e.g. a byte flipped between checksumming and sending
    with pytest.raises(ObjectStoreError) as refused:
        object_store.put("bad", Parts([damaged]), crc32c=whole)
    assert type(refused.value) is ObjectStoreError and "BadDigest" in str(refused.value)
    assert object_store.head("bad") is None
