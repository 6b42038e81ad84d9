"""One gRPC connection of the server: the transport with the MessagingService method table."""
from __future__ import annotations

from gateway.connections import NoBudget
from gateway.grpc.service import methods
from gateway.grpc.tls import secure
from gateway.grpc.transport import GrpcConnection


class Http2FrameTracker(NoBudget):
    """The server's slowloris check for an HTTP/2 byte stream (the client preface, then frames of
    a 9-byte header with a 24-bit length): `partial_since(now)` is how long a frame has been partly
    received. Stands in for gateway.connections.FrameTracker, which reads 4-byte size prefixes;
    like every NoBudget it holds nothing against the shared request-bytes budget."""

    __slots__ = ("_skip", "_head", "_started")
    PREFACE = 24

    def __init__(self) -> None:
        self._skip = self.PREFACE  # bytes still to come of the current frame (or the preface)
        self._head = b""  # bytes of a frame header received so far
        self._started = None

    def pause(self, seconds: float) -> None:
        """The gateway stopped reading for `seconds` (budget): the frame's deadline moves by as much."""
        if self._started is not None:
            self._started += seconds

    def received(self, data, now: float) -> None:
        i, end = 0, len(data)
        while i < end:
            if self._skip:
                take = min(self._skip, end - i)
                self._skip -= take
                i += take
                continue
            need = 9 - len(self._head)
            self._head += bytes(data[i:i + need])
            i += min(need, end - i)
            if len(self._head) == 9:
                self._skip = int.from_bytes(self._head[:3], "big")
                self._head = b""
        whole = not self._skip and not self._head
        self._started = None if whole else (self._started if self._started is not None else now)

    def partial_since(self, now: float) -> float:
        return 0.0 if self._started is None else now - self._started


async def handle_connection(conn, app) -> None:
    conn.frames = Http2FrameTracker()
    app.stats.connection_opened("grpc")
    try:
        stream = await secure(conn, app.config)
        if stream is None:
            return
        await GrpcConnection(stream, methods(app), max_message_size=max_request_size(app),
                             socket=conn.socket).serve()
    finally:
        app.stats.connections["grpc"] -= 1


def max_request_size(app) -> int:
    """The largest request message: a message body at the limit plus room for its properties."""
    return app.config.max_message_bytes + 256 * 1024
