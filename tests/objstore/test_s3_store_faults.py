"""The S3 adapter when the real server is away, hung, refuses the credentials, serves TLS or takes
virtual-host requests: each failure is one of the contract's errors within the configured bounds
(connect/read timeouts, a few retries), and the store works again once the server is back."""
from __future__ import annotations

import socket

import pytest

from objstore_fixtures import object_store_on
from store.objstore.api import NotFound, ObjectStoreError
from tests.security.certs import make_certs


def test_server_stopped_is_an_error_then_recovers(seaweed_factory):
    server = seaweed_factory()
    server.create_bucket("tier-bucket")
    store = object_store_on(server, "tier-bucket")
    store.put("k", b"before")
    server.stop()
    for call in (lambda: store.get("k"), lambda: store.put("k2", b"x"), lambda: store.head("k"),
                 lambda: list(store.list()), lambda: store.delete("k")):
        with pytest.raises(ObjectStoreError) as failed:
            call()
        assert not isinstance(failed.value, NotFound)  # "down" must not read as "absent"
        assert "connect" in str(failed.value).lower()
    server.start()  # same ports, same data
    assert store.get("k") == b"before"
    store.put("k2", b"after")
    assert store.get("k2") == b"after"


def test_hung_server_times_out_as_an_error(seaweed_factory):
    server = seaweed_factory()
    server.create_bucket("tier-bucket")
    store = object_store_on(server, "tier-bucket", read_timeout=1.0, connect_timeout=1.0, max_attempts=1)
    store.put("k", b"v")
    server.pause()  # SIGSTOP: the kernel still accepts connections, nothing answers
    try:
        with pytest.raises(ObjectStoreError) as failed:
            store.get("k")
        assert "timeout" in str(failed.value).lower() or "timed out" in str(failed.value).lower()
    finally:
        server.resume()
    assert store.get("k") == b"v"


def test_wrong_credentials_are_a_clear_error(seaweed_s3, s3_bucket, tmp_path):
    wrong = tmp_path / "credentials"
    wrong.write_text(f"[default]\naws_access_key_id = {seaweed_s3.access_key}\naws_secret_access_key = nope\n")
    store = object_store_on(seaweed_s3, s3_bucket, credentials_file=str(wrong))
    with pytest.raises(ObjectStoreError) as failed:
        store.put("k", b"v")
    assert not isinstance(failed.value, NotFound)
    assert "access denied" in str(failed.value) and "credentials" in str(failed.value)
    unknown = tmp_path / "unknown"
    unknown.write_text("[default]\naws_access_key_id = NOSUCHKEY\naws_secret_access_key = nope\n")
    with pytest.raises(ObjectStoreError, match="access denied"):
        object_store_on(seaweed_s3, s3_bucket, credentials_file=str(unknown)).get("k")


def test_tls_endpoint_verified_by_the_ca_file(seaweed_factory, tmp_path):
    certs = make_certs(str(tmp_path / "certs"))
    server = seaweed_factory(tls=(certs.server_cert, certs.server_key))
    server.create_bucket("tier-bucket")
    store = object_store_on(server, "tier-bucket", endpoint=server.https_endpoint, ca_file=certs.ca)
    store.put("k", b"over tls")
    assert store.get("k") == b"over tls"
    untrusted = object_store_on(server, "tier-bucket", endpoint=server.https_endpoint)  # the system CAs only
    with pytest.raises(ObjectStoreError, match="(?i)certificate|ssl"):
        untrusted.get("k")


def test_virtual_host_addressing(seaweed_factory, monkeypatch):
    """BUCKET.localhost names the bucket in the Host header (the server knows its domain). The test
    resolves *.localhost to 127.0.0.1 itself: this machine's resolver does not."""
    server = seaweed_factory(domain="localhost")
    server.create_bucket("vbucket")
    real_getaddrinfo = socket.getaddrinfo
    asked = []

    def resolve(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".localhost"):
            asked.append(host)
            host = "127.0.0.1"
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    endpoint = f"http://localhost:{server.ports['s3']}"
    store = object_store_on(server, "vbucket", endpoint=endpoint, addressing="virtual")
    store.put("k", b"virtual")
    assert asked and asked[0] == "vbucket.localhost"
    path_style = object_store_on(server, "vbucket", endpoint=endpoint, addressing="path")
    assert path_style.get("k") == b"virtual"  # the same object, reached the other way
    assert [i.key for i in store.list()] == ["k"]
