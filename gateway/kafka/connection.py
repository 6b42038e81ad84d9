"""One Kafka client connection: a trio loop around the sans-I/O `codec.kafka.connection`.

Requests are handled one after the other (like a Kafka broker's muted channel), which keeps the
order pipelined idempotent producers rely on. What the client gets wrong (a frame size outside
[10, max_frame_bytes], a request that does not decode) closes this connection with one warning;
an exception from a handler is our bug: it is logged with its traceback and closes this
connection only.
"""
from __future__ import annotations

import logging
import time

from codec.kafka.apis import BY_KEY
from codec.kafka.connection import CLOSED, NEED_DATA, Request, ServerConnection
from codec.kafka.schema import DecodeError
import gateway.kafka.handlers as handlers
from gateway.ops.stats import stats_of
from gateway.sendfile import FileRange, close_frame, send_parts

log = logging.getLogger("rocketgate.kafka")
RECV_CHUNK = 1 << 18
_API_NAMES = {key: api.name for key, api in BY_KEY.items()}  # metric labels


class Connection:
    """Per-connection context handed to the handlers."""

    def __init__(self, stream, app) -> None:
        self.stream = stream
        self.app = app
        self.stats = stats_of(app)
        sock = stream.socket
        self.local_port = sock.getsockname()[1]
        try:
            self.peer_host = sock.getpeername()[0]
        except OSError:
            self.peer_host = ""
        self.client_id = ""


async def handle_connection(stream, app) -> None:
    conn = Connection(stream, app)
    wire = ServerConnection(app.config.max_frame_bytes)
    stats = conn.stats
    stats.connection_opened("kafka")
    try:
        while True:
            try:
                event = wire.next_event()
            except DecodeError as exc:
                log.warning("closing kafka connection from %s: %s", conn.peer_host, exc)
                return
            if event is NEED_DATA:
                data = await stream.receive_some(RECV_CHUNK)
                stats.bytes_in["kafka"] += len(data)
                wire.receive_data(data)
            elif event is CLOSED or not await _answer(conn, wire, event):
                return
    finally:
        stats.connections["kafka"] -= 1


async def _answer(conn: Connection, wire: ServerConnection, request: Request) -> bool:
    """Handle one request and send its response; False when the connection must close."""
    header = request.header
    conn.client_id = header.client_id or ""
    began = time.perf_counter()
    stats = conn.stats
    api = _API_NAMES.get(header.api_key) or str(header.api_key)
    try:
        frame = await handlers.handle(conn, header, request.payload)
    except DecodeError as exc:
        stats.requests.observe("kafka", api, time.perf_counter() - began, error=True)
        log.warning("closing kafka connection from %s: malformed %s v%d request: %s", conn.peer_host,
                    header.api_key, header.api_version, exc)
        return False
    except Exception:  # a handler bug: this connection only, the server keeps serving
        stats.requests.observe("kafka", api, time.perf_counter() - began, error=True)
        log.exception("closing kafka connection from %s: %s v%d request failed", conn.peer_host,
                      header.api_key, header.api_version)
        return False
    if frame is None:  # acks=0 produce: no response; unknown API: close like Kafka does
        wire.send_nothing()
        known = header.api_key in handlers.HANDLERS or header.api_key == 18
        stats.requests.observe("kafka", api, time.perf_counter() - began, error=not known)
        return known
    try:
        parts = wire.send(frame)
        await send_parts(conn.stream, parts)
    finally:
        close_frame(frame)
    stats.bytes_out["kafka"] += sum(p.count if type(p) is FileRange else len(p) for p in parts)
    stats.requests.observe("kafka", api, time.perf_counter() - began)
    return True
