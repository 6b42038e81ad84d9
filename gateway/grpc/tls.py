"""TLS on the gRPC port, as the RocketMQ proxy serves it: with --tls-cert/--tls-key the port takes
TLS (ALPN h2) and plaintext alike, told apart by the first byte (0x16: a TLS handshake record).
The Java SDK uses TLS unless told otherwise; the Python SDK plaintext."""
from __future__ import annotations

import logging
import ssl

import trio

from gateway.connections import NoBudget
from gateway.tls import server_context

log = logging.getLogger("rocketgate.grpc")

HANDSHAKE_TIMEOUT_S = 10.0
TLS_HANDSHAKE = 0x16
_contexts: dict = {}  # (cert, key, ca) -> SSLContext with ALPN h2


class Replay(trio.abc.HalfCloseableStream):
    """A stream whose first bytes were already read: they are received again first."""

    def __init__(self, stream, head: bytes) -> None:
        self.stream, self.head = stream, head

    async def receive_some(self, max_bytes=None) -> bytes:
        if self.head:
            head, self.head = self.head, b""
            return head
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


def _context(config) -> ssl.SSLContext:
    key = (config.tls_cert, config.tls_key, config.tls_ca)
    ctx = _contexts.get(key)
    if ctx is None:
        ctx = _contexts[key] = server_context(*key)
        ctx.set_alpn_protocols(["h2"])
    return ctx


async def secure(conn, config):
    """The stream to speak HTTP/2 on: `conn` itself without TLS files; else TLS or plaintext by the
    client's first byte. None when the client left or its handshake failed."""
    if not (config.tls_cert and config.tls_key):
        return conn
    first = await conn.receive_some(65536)
    if not first:
        return None
    if first[0] != TLS_HANDSHAKE:
        return Replay(conn, first)
    conn.frames = NoBudget()  # TLS records are not HTTP/2 frames
    tls = trio.SSLStream(Replay(conn, first), _context(config), server_side=True)
    with trio.move_on_after(HANDSHAKE_TIMEOUT_S):
        try:
            await tls.do_handshake()
            return tls
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("gRPC TLS handshake failed: %s", exc.__cause__ or exc)
            return None
    return None
