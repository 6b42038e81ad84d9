"""gRPC message framing, sans-I/O (the HTTP/2 layer is `h2`, driven by gateway.grpc).

A gRPC message on an HTTP/2 stream is a 5-byte prefix (1 byte compressed flag, 4 bytes big-endian
length) and the serialized protobuf. `MessageReader` splits a stream's DATA into messages with a
size cap; `frame` builds one; `parse_timeout` reads the `grpc-timeout` header; `status_trailers`
builds the trailers every call ends with (`grpc-status`, percent-encoded `grpc-message`).
"""
from __future__ import annotations

import enum
import struct
import urllib.parse

_PREFIX = struct.Struct(">BI")
PREFIX_SIZE = _PREFIX.size  # 5


class StatusCode(enum.IntEnum):
    """The gRPC status codes (grpc/doc/statuscodes.md)."""
    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14


class FramingError(ValueError):
    """A message that cannot be read: `status` says which gRPC status the call ends with."""

    def __init__(self, status: StatusCode, message: str) -> None:
        super().__init__(message)
        self.status = status


def frame(payload: bytes) -> bytes:
    """One uncompressed gRPC message."""
    return _PREFIX.pack(0, len(payload)) + payload


class MessageReader:
    """Feed a stream's DATA bytes; `messages()` yields each whole message's payload. Refuses
    (FramingError) a message over `max_size` as soon as its prefix is seen, and compressed messages
    (no grpc-encoding is offered, so a client must not send any)."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out = []
        while len(self._buf) >= PREFIX_SIZE:
            flag, size = _PREFIX.unpack_from(self._buf)
            if flag not in (0, 1):
                raise FramingError(StatusCode.INTERNAL, f"bad gRPC message flag {flag}")
            if flag == 1:
                raise FramingError(StatusCode.UNIMPLEMENTED, "compressed gRPC messages are not supported")
            if size > self.max_size:
                raise FramingError(StatusCode.RESOURCE_EXHAUSTED,
                                   f"gRPC message of {size} bytes is larger than the limit {self.max_size}")
            if len(self._buf) < PREFIX_SIZE + size:
                break
            out.append(bytes(self._buf[PREFIX_SIZE:PREFIX_SIZE + size]))
            del self._buf[:PREFIX_SIZE + size]
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message held (a stream that ends with some is malformed)."""
        return len(self._buf)


_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def parse_timeout(value: str | bytes) -> float:
    """Seconds of a `grpc-timeout` header ("100m", "5S": at most 8 digits and a unit)."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    digits, unit = value[:-1], value[-1:]
    if not digits.isdigit() or len(digits) > 8 or unit not in _TIMEOUT_UNITS:
        raise ValueError(f"bad grpc-timeout {value!r}")
    return int(digits) * _TIMEOUT_UNITS[unit]


def status_trailers(status: int, message: str = "") -> list[tuple[str, str]]:
    trailers = [("grpc-status", str(int(status)))]
    if message:
        trailers.append(("grpc-message", urllib.parse.quote(message, safe=" !\"#$&'()*+,-./:;<=>?@[]^_`{|}~")))
    return trailers
