"""gateway.tls.WholeReads: one read of the server's TLS object returns every whole record already
received (clients such as librdkafka write a request as many small records), keeps a partial record
for later, and reports the peer's close or a broken record only after the bytes before it."""
from __future__ import annotations

import ssl

import pytest

from gateway.tls import server_context
from tests.security.certs import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(str(tmp_path_factory.mktemp("certs")))


class Pair:
    """A client and the gateway's server TLS object over memory BIOs, handshake done."""

    def __init__(self, certs, version: ssl.TLSVersion) -> None:
        client_ctx = ssl.create_default_context(cafile=certs.ca)
        client_ctx.maximum_version = version
        self.server_in, server_out, client_in, self.client_out = (ssl.MemoryBIO() for _ in range(4))
        self.server = server_context(certs.server_cert, certs.server_key).wrap_bio(
            self.server_in, server_out, server_side=True)
        self.client = client_ctx.wrap_bio(client_in, self.client_out, server_hostname="localhost")
        for _ in range(5):
            for side in (self.client, self.server):
                try:
                    side.do_handshake()
                except ssl.SSLWantReadError:
                    pass
            self.server_in.write(self.client_out.read())
            client_in.write(server_out.read())
        assert self.server.version() == self.client.version()

    def records(self, *payloads: bytes) -> bytes:
        """The encrypted records of `payloads`, one record each (not yet delivered to the server)."""
        out = b""
        for payload in payloads:
            self.client.write(payload)
            out += self.client_out.read()
        return out


VERSIONS = pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3],
                                   ids=["TLSv1.2", "TLSv1.3"])


@VERSIONS
def test_one_read_returns_every_whole_record_and_keeps_a_partial_one(certs, version):
    pair = Pair(certs, version)
    small = [bytes([i]) * (5 + 100 * i) for i in range(40)]
    wire = pair.records(*small)
    last = pair.records(b"z" * 20_000)  # two records: 16 KiB and the rest
    pair.server_in.write(wire + last[:100])
    assert pair.server.read(1 << 18) == b"".join(small)
    with pytest.raises(ssl.SSLWantReadError):
        pair.server.read(1 << 18)
    pair.server_in.write(last[100:])
    assert pair.server.read(1 << 18) == b"z" * 20_000


@VERSIONS
def test_a_read_stops_at_the_size_asked(certs, version):
    pair = Pair(certs, version)
    pair.server_in.write(pair.records(b"a" * 300, b"b" * 300, b"c" * 300))
    assert pair.server.read(500) == b"a" * 300 + b"b" * 200
    assert pair.server.read(1000) == b"b" * 100 + b"c" * 300


@VERSIONS
def test_close_notify_after_records_reads_as_their_bytes_then_the_end(certs, version):
    pair = Pair(certs, version)
    data = pair.records(b"a" * 10, b"b" * 10)
    try:
        pair.client.unwrap()
    except ssl.SSLWantReadError:
        pass
    pair.server_in.write(data + pair.client_out.read())
    assert pair.server.read(1 << 18) == b"a" * 10 + b"b" * 10
    assert pair.server.read(1 << 18) == b""
    assert pair.server.read(1 << 18) == b""


@VERSIONS
def test_a_broken_record_fails_the_read_after_the_good_ones(certs, version):
    pair = Pair(certs, version)
    good = pair.records(b"a" * 10, b"b" * 10)
    bad = bytearray(pair.records(b"c" * 10))
    bad[-1] ^= 1  # the authentication tag no longer matches
    pair.server_in.write(good + bytes(bad))
    assert pair.server.read(1 << 18) == b"a" * 10 + b"b" * 10
    with pytest.raises(ssl.SSLError) as failed:
        pair.server.read(1 << 18)
    assert not isinstance(failed.value, ssl.SSLWantReadError)
