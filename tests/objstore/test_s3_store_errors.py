"""Answers the real server (tests/objstore/test_s3_store_*.py) cannot be made to give: throttling (503
SlowDown), an internal error (500), AWS's 409 ConditionalRequestConflict for racing conditional writes.
botocore's Stubber answers in the server's place; the adapter must keep them apart from "absent" and
"lost the conditional write", which the tier treats as final."""
from __future__ import annotations

import pytest
from botocore.stub import Stubber

from store.objstore.api import NotFound, ObjectStoreError, PreconditionFailed
from store.objstore.s3 import S3ObjectStore


@pytest.fixture
def stubbed(tmp_path):
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AK\naws_secret_access_key = SK\n")
    store = S3ObjectStore.from_url("s3://bucket/pre", endpoint="http://127.0.0.1:9", credentials_file=str(creds),
                                   max_attempts=1)
    with Stubber(store._client) as stub:
        yield store, stub


@pytest.mark.parametrize("code, status", [("SlowDown", 503), ("InternalError", 500),
                                          ("ServiceUnavailable", 503), ("ConditionalRequestConflict", 409)])
def test_server_side_failures_are_retryable_errors(stubbed, code, status):
    store, stub = stubbed
    stub.add_client_error("put_object", service_error_code=code, http_status_code=status)
    with pytest.raises(ObjectStoreError) as failed:
        store.put("k", b"v", if_absent=True)
    assert type(failed.value) is ObjectStoreError  # neither NotFound nor PreconditionFailed
    assert code in str(failed.value) and "bucket/pre/k" in str(failed.value)


def test_conditional_put_sends_if_none_match_and_maps_412(stubbed):
    store, stub = stubbed
    stub.add_client_error("put_object", service_error_code="PreconditionFailed", http_status_code=412,
                          expected_params={"Bucket": "bucket", "Key": "pre/m", "Body": b"v",
                                           "ChecksumSHA256": "TJRIXgwhrmxBzh3+e2v6zupato5AokdvUCCOUm9QYIA=",
                                           "IfNoneMatch": "*"})
    with pytest.raises(PreconditionFailed):
        store.put("m", b"v", if_absent=True)


def test_delete_of_an_absent_key_is_quiet_where_a_server_says_no_such_key(stubbed):
    store, stub = stubbed
    stub.add_client_error("delete_object", service_error_code="NoSuchKey", http_status_code=404)
    store.delete("k")
    stub.add_client_error("delete_object", service_error_code="NoSuchBucket", http_status_code=404)
    with pytest.raises(NotFound):
        store.delete("k")
