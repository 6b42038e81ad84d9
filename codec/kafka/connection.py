"""The server side of one Kafka connection, sans I/O: bytes in, requests out; responses in, bytes out.

The owner feeds what it receives (`receive_data`), takes requests one at a time (`next_event`),
answers each one in order (`send` or `send_nothing`) and writes the returned parts itself; this
module never touches a socket. Errors say whose fault they are: `RemoteProtocolError` (the client
sent something that is not a Kafka request; a `DecodeError`, so one `except DecodeError` covers
every client fault the codec reports) or `LocalProtocolError` (our side broke the contract: a bug).

A frame is buffered once: one whole frame inside a received chunk is handed out as a view of that
chunk, and a frame spread over several chunks is copied into one buffer of its announced size,
allocated only after the size passed the limits (so memory stays near one copy of the frame).
A large frame's buffer is an anonymous mapping of its own: its pages become resident only as the
bytes arrive (a client announcing 100 MiB and sending little holds little), and it goes back to
the system when the request is done (heap blocks of that size would keep the process larger).
"""
from __future__ import annotations

import dataclasses
import mmap
import struct

from codec.kafka.protocol import RequestHeader, parse_header
from codec.kafka.schema import DecodeError

SIZE = struct.Struct(">i")
MIN_FRAME = 10  # api_key, api_version, correlation_id and the client id length
MAPPED_FRAME = 1 << 20  # frames from this size on are assembled in an anonymous mapping


class RemoteProtocolError(DecodeError):
    """The client broke the protocol (bad frame size, undecodable header); close the connection."""


class LocalProtocolError(RuntimeError):
    """Our side broke the connection's contract (answered out of order, or nothing to answer)."""


@dataclasses.dataclass
class Request:
    """One request: its parsed header and the whole frame after the size prefix (a read-only view)."""

    header: RequestHeader
    payload: memoryview


@dataclasses.dataclass
class SaslToken:
    """A bare SASL token: after a SaslHandshake v0 the client sends its tokens as size-prefixed frames
    without a request header until authentication ends (`ServerConnection.raw_tokens`)."""

    token: bytes


class Closed:
    """The client closed the connection (any partial frame it left is dropped)."""


class NeedData:
    """No complete request buffered: feed more bytes."""


CLOSED = Closed()
NEED_DATA = NeedData()


class ServerConnection:
    """Frames requests out of received bytes and checks that responses follow them in order."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._chunks: list[memoryview] = []  # received bytes not yet taken, oldest first
        self._buffered = 0
        self._size = -1  # announced size of the frame being assembled, -1 until its prefix is read
        self._frame: bytearray | mmap.mmap | None = None  # a frame that spans chunks, filled up to `_filled`
        self._filled = 0
        self._eof = False
        self._unanswered: list[int] = []  # correlation ids of requests taken but not yet answered
        self.raw_tokens = False  # set by the owner after a SaslHandshake v0, cleared once authenticated

    # ------------------------------------------------------------ receiving

    def receive_data(self, data: bytes) -> None:
        """Bytes received from the client; b"" means it closed its side."""
        if not data:
            self._eof = True
        elif not self._eof:
            self._chunks.append(memoryview(data).toreadonly())
            self._buffered += len(data)

    def next_event(self) -> Request | SaslToken | NeedData | Closed:
        """The next complete request (a SaslToken in `raw_tokens` mode), NEED_DATA, or CLOSED; raises
        RemoteProtocolError or DecodeError when the client's bytes are not a request (the connection
        is then unusable)."""
        if self._size < 0:
            if self._buffered < SIZE.size:
                return CLOSED if self._eof else NEED_DATA
            size = SIZE.unpack(self._take(SIZE.size))[0]
            least = 0 if self.raw_tokens else MIN_FRAME
            if not least <= size <= self.max_frame_bytes:
                raise self._broken(f"frame size {size} outside [{least}, {self.max_frame_bytes}]")
            self._size = size
        payload = self._assemble()
        if payload is None:
            return CLOSED if self._eof else NEED_DATA
        self._size = -1
        if self.raw_tokens:
            return SaslToken(bytes(payload))
        try:
            header = parse_header(payload)
        except DecodeError as exc:
            raise self._broken(f"bad request header: {exc}") from exc
        self._unanswered.append(header.correlation_id)
        return Request(header, payload)

    def _broken(self, reason: str) -> RemoteProtocolError:
        """Drop everything buffered: after a protocol error the connection only reports CLOSED."""
        self._chunks.clear()
        self._buffered = 0
        self._eof = True
        return RemoteProtocolError(reason)

    def _assemble(self) -> memoryview | None:
        """The frame of `_size` bytes once all of it is here; copies only a frame split over chunks."""
        size = self._size
        if self._frame is None:
            if self._chunks and len(self._chunks[0]) >= size:
                return self._take(size)
            self._frame = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE) if size >= MAPPED_FRAME else bytearray(size)
            self._filled = 0
        frame = memoryview(self._frame)
        while self._chunks and self._filled < size:
            part = self._take(min(size - self._filled, len(self._chunks[0])))
            frame[self._filled:self._filled + len(part)] = part
            self._filled += len(part)
        if self._filled < size:
            return None
        self._frame = None
        return frame.toreadonly()

    def _take(self, n: int) -> memoryview:
        """The next `n` buffered bytes: a view of the first chunk, or a copy when they span chunks."""
        first = self._chunks[0]
        if len(first) < n:  # a size prefix split across chunks
            out = bytearray()
            while len(out) < n:
                out += self._take(min(n - len(out), len(self._chunks[0])))
            return memoryview(bytes(out))
        if len(first) == n:
            self._chunks.pop(0)
        else:
            self._chunks[0] = first[n:]
        self._buffered -= n
        return first[:n]

    # ------------------------------------------------------------ answering

    def send(self, frame) -> list:
        """The parts to write, in order, for the response `frame` to the oldest unanswered request:
        memoryviews of the encoded bytes and, between them, the opaque parts of each `Spliced` value
        (`frame.splices`) that the owner writes itself (e.g. file ranges sent with sendfile)."""
        self._answer(SIZE.unpack_from(frame, 4)[0] if len(frame) >= 8 else None)
        view = memoryview(frame)
        parts: list = []
        pos = 0
        for at, spliced in getattr(frame, "splices", ()):
            if at > pos:
                parts.append(view[pos:at])
            parts.extend(part for part in spliced.parts if part)
            pos = at
        if pos < len(view):
            parts.append(view[pos:])
        return parts

    @staticmethod
    def token_frame(token: bytes) -> bytes:
        """The bytes of a bare SASL token answered in `raw_tokens` mode (size prefix, no header)."""
        return SIZE.pack(len(token)) + token

    def send_nothing(self) -> None:
        """The oldest unanswered request gets no response (a Produce with acks=0)."""
        self._answer(None)

    def _answer(self, correlation_id: int | None) -> None:
        if not self._unanswered:
            raise LocalProtocolError("a response with no request to answer")
        expected = self._unanswered.pop(0)
        if correlation_id is not None and correlation_id != expected:
            raise LocalProtocolError(f"response to correlation id {correlation_id}, expected {expected}")
