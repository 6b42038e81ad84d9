"""The h2 connection of the gRPC transport, with cheaper per-call header paths and the same bytes
on the wire. A unary call costs two header blocks out and one in; in pure Python, h2's generic
per-header pipeline and HPACK encoding were about half of the gateway's CPU per gRPC call.

- `CachingEncoder` remembers the HPACK block of a header list whose encoding left the dynamic
  table unchanged (`:status 200` + `content-type`, `grpc-status 0` once those are indexed) and
  hands it out again while the table is still the same, so the output is byte for byte what
  hpack would produce.
- `IndexedFastDecoder` decodes the one-byte indexed fields (most of a repeated request's
  headers) and the literals with an indexed name (the values that change per call) inline and
  leaves every other representation to hpack.
- `RequestStream` checks a request header block in one pass against a stricter subset of h2's
  inbound rules (RFC 9113 §8.2-8.3), each distinct header judged once (a cache); a block that is not plainly fine (uppercase, connection
  headers, `te` but trailers, `host`, cookies, odd pseudo-headers, ...) goes through h2's own
  validation, so every malformed block is refused exactly as h2 refuses it.
"""
from __future__ import annotations

import functools
import re
import struct

import h2.connection
import h2.exceptions
import h2.stream
import hpack
from hpack.exceptions import HPACKDecodingError, InvalidTableIndex, OversizedHeaderListError
from hpack.huffman_table import decode_huffman
from hpack.table import HeaderTable, table_entry_size

# A regular header name: visible ASCII without uppercase and ':' (h2 refuses 0x00-0x20, 0x41-0x5a,
# 0x7f-0xff and a ':' after the first byte).
_NAME = re.compile(rb"[!-9;-@\[-~]+")
# A value without NUL, CR, LF and not starting or ending with SP or HTAB (or empty).
_VALUE = re.compile(rb"(?:[^\x00\n\r \t](?:[^\x00\n\r]*[^\x00\n\r \t])?)?")
# Names h2 treats specially (connection-specific, host/:authority matching, cookie joining).
_SPECIAL = frozenset({b"connection", b"proxy-connection", b"keep-alive", b"transfer-encoding", b"upgrade",
                      b"host", b"cookie"})
_REQUEST_PSEUDO = frozenset({b":method", b":scheme", b":path", b":authority"})


@functools.lru_cache(maxsize=1024)
def _plain_pair(name: bytes, value: bytes, encoding: str) -> tuple | None:
    """The decoded pair if this one header passes h2's checks on its own, else None. Cached: most
    of a client's headers repeat on every call (only the request id, date and timeout vary)."""
    if name[:1] == b":":
        if not value:
            return None
    elif name in _SPECIAL or _NAME.fullmatch(name) is None or (name == b"te" and value.lower() != b"trailers"):
        return None
    if _VALUE.fullmatch(value) is None:
        return None
    try:
        return name.decode(encoding), value.decode(encoding)
    except UnicodeDecodeError:
        return None


def plain_request_headers(headers, encoding: str) -> list | None:
    """The decoded (name, value) pairs of a request header block that passes h2's inbound checks
    for certain, or None when h2 must judge it (it may refuse it)."""
    out, pseudo, regular = [], set(), False
    for name, value in headers:
        pair = _plain_pair(name, value, encoding)
        if pair is None:
            return None
        if name[:1] == b":":
            if regular or name in pseudo or name not in _REQUEST_PSEUDO:
                return None
            pseudo.add(name)
        else:
            regular = True
        out.append(pair)
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


# A frame header: 24-bit length (as 8 + 16 bits), type, flags, stream id (RFC 9113 §4.1). Type 0x1 is
# HEADERS; flag 0x4 END_HEADERS, 0x1 END_STREAM.
_HEADERS_FRAME = struct.Struct(">BHBBL")
_STATIC_HEADERS = [hpack.HeaderTuple(*pair) for pair in HeaderTable.STATIC_TABLE]  # immutable: shared
_N_STATIC = len(_STATIC_HEADERS)


class IndexedFastDecoder(hpack.Decoder):
    """hpack's decoder with short paths for one-byte indexed fields (index 1-126) and for literals
    with incremental indexing under an indexed name (what a client sends for the values that
    change per call): the same headers, table and errors, without hpack's copies of the rest of
    the block, two calls and a debug log line per field."""

    def decode(self, data: bytes, raw: bool = False):
        if not raw:
            return super().decode(data, raw)
        data = bytes(data)
        table = self.header_table
        entries, limit = table.dynamic_entries, self.max_header_list_size
        view, headers, size, i, end = memoryview(data), [], 0, 0, len(data)
        while i < end:
            first = data[i]
            if 0x80 < first < 0xFF:  # indexed, index 1-126 in this byte
                index = first - 0x81
                if index < _N_STATIC:
                    header = _STATIC_HEADERS[index]
                elif index - _N_STATIC < len(entries):
                    header = hpack.HeaderTuple(*entries[index - _N_STATIC])
                else:
                    table.get_by_index(index + 1)  # raises hpack's InvalidTableIndex
                headers.append(header)
                size += 32 + len(header[0]) + len(header[1])  # hpack's table_entry_size
                if size > limit:
                    raise OversizedHeaderListError(f"A header list larger than {limit} has been received")
                i += 1
                continue
            if first & 0x80:
                header, consumed = self._decode_indexed(view[i:])
            elif first & 0x40:
                found = self._literal_with_indexed_name(data, i) if first & 0x3F else None
                header, consumed = found if found is not None else self._decode_literal_index(view[i:])
            elif first & 0x20:
                if headers:
                    raise HPACKDecodingError("Table size update not at the start of the block")
                header, consumed = None, self._update_encoding_context(view[i:])
            else:
                header, consumed = self._decode_literal_no_index(view[i:])
            if header:
                headers.append(header)
                size += table_entry_size(header[0], header[1])
                if size > self.max_header_list_size:
                    raise OversizedHeaderListError(
                        f"A header list larger than {self.max_header_list_size} has been received")
            i += consumed
        self._assert_valid_table_size()
        return headers

    def _literal_with_indexed_name(self, data: bytes, i: int):
        """(header, bytes consumed) of the literal with incremental indexing at `i` when its name
        index and value length take at most two bytes each; None leaves it to hpack (which also
        refuses a bad one). Nothing changes before the field is known to be whole."""
        end = len(data)
        index, j = data[i] & 0x3F, i + 1
        if index == 0x3F:  # 63 + one continuation byte
            if j >= end or data[j] & 0x80:
                return None
            index, j = index + data[j], j + 1
        if j >= end:
            return None
        huffman, length = data[j] & 0x80, data[j] & 0x7F
        j += 1
        if length == 0x7F:
            if j >= end or data[j] & 0x80:
                return None
            length, j = length + data[j], j + 1
        value = data[j:j + length]
        if len(value) != length:
            return None
        try:
            name = self.header_table.get_by_index(index)[0]
        except InvalidTableIndex:
            return None
        if huffman:
            value = decode_huffman(value)
        self.header_table.add(name, value)
        return hpack.HeaderTuple(name, value), j + length - i


class GrpcH2Connection(h2.connection.H2Connection):
    """h2's server connection with `RequestStream` streams, a `CachingEncoder` and an
    `IndexedFastDecoder`."""

    def __init__(self, config) -> None:
        super().__init__(config=config)
        self.encoder = CachingEncoder()
        decoder = IndexedFastDecoder()
        decoder.max_header_list_size = self.decoder.max_header_list_size
        decoder.max_allowed_table_size = self.decoder.max_allowed_table_size
        self.decoder = decoder

    def send_fixed_headers(self, stream_id: int, headers: tuple, end_stream: bool = False) -> None:
        """`send_headers` of a constant header list (the OK response headers or trailers: no
        informational status, no priority, a block within one frame) on a known stream: h2's
        connection and stream state changes in h2's order, then the HEADERS frame written
        directly, the same bytes as h2's, without h2's frame objects and per-header passes."""
        stream = self.streams.get(stream_id)
        if stream is None:
            self.send_headers(stream_id, headers, end_stream=end_stream)
            return
        self.state_machine.process_input(h2.connection.ConnectionInputs.SEND_HEADERS)
        stream.state_machine.process_input(h2.stream.StreamInputs.SEND_HEADERS)
        block = self.encoder.encode(headers)
        if len(block) > self.max_outbound_frame_size:
            raise ValueError("a fixed header block must fit one frame")  # never: they are a few bytes
        if end_stream:
            stream.state_machine.process_input(h2.stream.StreamInputs.SEND_END_STREAM)
        elif stream.state_machine.trailers_sent:
            raise h2.exceptions.ProtocolError("Trailers must have END_STREAM set.")
        stream.request_method = None  # as h2 records for a block without :method
        self._data_to_send += _HEADERS_FRAME.pack(len(block) >> 16, len(block) & 0xFFFF, 0x1,
                                                  0x5 if end_stream else 0x4, stream_id) + block

    def _begin_new_stream(self, stream_id, allowed_ids):
        stream = super()._begin_new_stream(stream_id, allowed_ids)
        stream.__class__ = RequestStream
        return stream
