"""The h2 connection of the gRPC transport, with cheaper per-call header paths and the same bytes
on the wire. A unary call costs two header blocks out and one in; in pure Python, h2's generic
per-header pipeline and HPACK encoding were about half of the gateway's CPU per gRPC call.

- `CachingEncoder` remembers the HPACK block of a header list whose encoding left the dynamic
  table unchanged (`:status 200` + `content-type`, `grpc-status 0` once those are indexed) and
  hands it out again while the table is still the same, so the output is byte for byte what
  hpack would produce.
- `RequestStream` checks a request header block in one pass against a stricter subset of h2's
  inbound rules (RFC 9113 §8.2-8.3); a block that is not plainly fine (uppercase, connection
  headers, `te` but trailers, `host`, cookies, odd pseudo-headers, ...) goes through h2's own
  validation, so every malformed block is refused exactly as h2 refuses it.
"""
from __future__ import annotations

import re

import h2.connection
import h2.stream
import hpack

# A regular header name: visible ASCII without uppercase and ':' (h2 refuses 0x00-0x20, 0x41-0x5a,
# 0x7f-0xff and a ':' after the first byte).
_NAME = re.compile(rb"[!-9;-@\[-~]+")
# A value without NUL, CR, LF and not starting or ending with SP or HTAB (or empty).
_VALUE = re.compile(rb"(?:[^\x00\n\r \t](?:[^\x00\n\r]*[^\x00\n\r \t])?)?")
# Names h2 treats specially (connection-specific, host/:authority matching, cookie joining).
_SPECIAL = frozenset({b"connection", b"proxy-connection", b"keep-alive", b"transfer-encoding", b"upgrade",
                      b"host", b"cookie"})
_REQUEST_PSEUDO = frozenset({b":method", b":scheme", b":path", b":authority"})


def plain_request_headers(headers, encoding: str) -> list | None:
    """The decoded (name, value) pairs of a request header block that passes h2's inbound checks
    for certain, or None when h2 must judge it (it may refuse it)."""
    out, pseudo, regular = [], set(), False
    name_ok, value_ok = _NAME.fullmatch, _VALUE.fullmatch
    for name, value in headers:
        if name[:1] == b":":
            if regular or name in pseudo or name not in _REQUEST_PSEUDO or not value:
                return None
            pseudo.add(name)
        elif name in _SPECIAL or name_ok(name) is None or (name == b"te" and value.lower() != b"trailers"):
            return None
        else:
            regular = True
        if value_ok(value) is None:
            return None
        try:
            out.append((name.decode(encoding), value.decode(encoding)))
        except UnicodeDecodeError:
            return None
    if len(pseudo) != 4:  # :method, :scheme, :path and :authority, each once
        return None
    return out


class RequestStream(h2.stream.H2Stream):
    """An h2 stream whose request headers take `plain_request_headers` when they can."""

    def _process_received_headers(self, headers, header_validation_flags, header_encoding):
        flags = header_validation_flags
        if (isinstance(header_encoding, str) and self.config.validate_inbound_headers
                and not flags.is_client and not flags.is_trailer and not flags.is_response_header
                and not flags.is_push_promise):
            headers = list(headers)
            plain = plain_request_headers(headers, header_encoding)
            if plain is not None and _method_fine(plain):
                return plain
        return super()._process_received_headers(headers, header_validation_flags, header_encoding)


def _method_fine(headers: list) -> bool:
    """The request is no CONNECT (h2 treats those apart) and its :path is a path."""
    for name, value in headers:
        if name == ":method":
            if value == "CONNECT":
                return False
        elif name == ":path":
            if value[:1] != "/":
                return False
    return True


class CachingEncoder(hpack.Encoder):
    """hpack's encoder, answering a repeated header list from a cache while the dynamic table is
    as it was when the cached block was made (and that encoding left it unchanged)."""

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict = {}

    def _state(self) -> tuple:
        entries = self.header_table.dynamic_entries
        return (entries[0] if entries else None, len(entries), self.header_table.maxsize,
                bool(self.table_size_changes))

    def encode(self, headers, huffman: bool = True) -> bytes:
        if isinstance(headers, dict) or not huffman:
            return super().encode(headers, huffman)
        headers = tuple(headers)
        if not all(type(h) is tuple and len(h) == 2 for h in headers):
            return super().encode(headers, huffman)
        state = self._state()
        found = self._cache.get(headers)
        if found is not None and found[0] == state and found[0][0] is state[0]:
            return found[1]
        block = super().encode(headers, huffman)
        after = self._state()
        if after == state and after[0] is state[0] and not after[3]:
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[headers] = (after, block)
        return block


class GrpcH2Connection(h2.connection.H2Connection):
    """h2's server connection with `RequestStream` streams and a `CachingEncoder`."""

    def __init__(self, config) -> None:
        super().__init__(config=config)
        self.encoder = CachingEncoder()

    def _begin_new_stream(self, stream_id, allowed_ids):
        stream = super()._begin_new_stream(stream_id, allowed_ids)
        stream.__class__ = RequestStream
        return stream
