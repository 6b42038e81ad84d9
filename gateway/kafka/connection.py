"""One Kafka client connection: read size-prefixed frames, answer them strictly in order.

Requests are handled one after the other (like a Kafka broker's muted channel), which keeps the
order pipelined idempotent producers rely on. A frame over `max_frame_bytes` or a request that
does not decode closes this connection only.
"""
from __future__ import annotations

import logging
import struct

from codec.kafka import protocol
from codec.kafka.schema import DecodeError
import gateway.kafka.handlers as handlers
from gateway.sendfile import send_frame

log = logging.getLogger("rocketgate.kafka")
SIZE = struct.Struct(">i")
RECV_CHUNK = 1 << 18


class Connection:
    """Per-connection context handed to the handlers."""

    def __init__(self, stream, app) -> None:
        self.stream = stream
        self.app = app
        sock = stream.socket
        self.local_port = sock.getsockname()[1]
        try:
            self.peer_host = sock.getpeername()[0]
        except OSError:
            self.peer_host = ""
        self.client_id = ""


async def _read_exact(stream, pending: bytearray, n: int) -> bytes | None:
    """`n` bytes from `pending` plus the stream (extra bytes stay in `pending`); None on EOF."""
    if len(pending) >= n:
        out = bytes(pending[:n])
        del pending[:n]
        return out
    chunks = [bytes(pending)]
    have = len(pending)
    pending.clear()
    while have < n:
        chunk = await stream.receive_some(max(RECV_CHUNK, n - have))
        if not chunk:
            return None
        chunks.append(chunk)
        have += len(chunk)
    data = b"".join(chunks)
    if have > n:
        pending += memoryview(data)[n:]
        return data[:n]
    return data


async def handle_connection(stream, app) -> None:
    conn = Connection(stream, app)
    limit = app.config.max_frame_bytes
    pending = bytearray()
    while True:
        head = await _read_exact(stream, pending, 4)
        if head is None:
            return
        size = SIZE.unpack(head)[0]
        if size < 10 or size > limit:
            log.warning("closing kafka connection from %s: frame size %d outside [10, %d]",
                        conn.peer_host, size, limit)
            return
        payload = await _read_exact(stream, pending, size)
        if payload is None:
            return
        try:
            header = protocol.parse_header(payload)
        except (DecodeError, ValueError) as exc:
            log.warning("closing kafka connection from %s: bad request header: %s", conn.peer_host, exc)
            return
        conn.client_id = header.client_id or ""
        try:
            frame = await handlers.handle(conn, header, payload)
        except (DecodeError, ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
            log.warning("closing kafka connection from %s: malformed %s v%d request: %s", conn.peer_host,
                        header.api_key, header.api_version, exc)
            return
        if frame is None:  # acks=0 produce: no response; unknown API: close like Kafka does
            if header.api_key not in handlers.HANDLERS and header.api_key != 18:
                return
            continue
        await send_frame(stream, frame)
