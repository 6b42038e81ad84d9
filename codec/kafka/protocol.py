"""Request/response framing: headers, version support and the per-(api, version) compiled codecs."""
from __future__ import annotations

import dataclasses
import functools

from codec.kafka import apis
from codec.kafka.encoded import Encoded
from codec.kafka.schema import (I16, I32, DecodeError, Frame, compile_message, compile_struct, skip_tagged_fields,
                                write_uvarint)

HEADER = __import__("struct").Struct(">hhi")


@dataclasses.dataclass
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int


def supported(api_key: int, version: int) -> bool:
    """True when we advertise and can decode this (api, version)."""
    api = apis.BY_KEY.get(api_key)
    return api is not None and api.min_version <= version <= api.max_version


def parse_header(payload) -> RequestHeader:
    """Request header v1 (or v2 for flexible versions of known APIs); client_id is never compact."""
    if len(payload) < 10:
        raise DecodeError("short request header")
    api_key, version, correlation_id = HEADER.unpack_from(payload, 0)
    n = I16.unpack_from(payload, 8)[0]
    pos = 10
    client_id = None
    if n >= 0:
        if pos + n > len(payload):
            raise DecodeError("truncated client id")
        client_id = bytes(payload[pos:pos + n]).decode("utf-8", "replace")
        pos += n
    api = apis.BY_KEY.get(api_key)
    if api is not None and supported(api_key, version) and api.flexible(version):
        pos = skip_tagged_fields(payload, pos)
    return RequestHeader(api_key, version, correlation_id, client_id, pos)


@functools.lru_cache(maxsize=None)
def codecs(api_key: int, version: int):
    """(decode_request(buf, pos) -> dict, encode_response_into(bytearray, dict)) for (api, version)."""
    api = apis.BY_KEY[api_key]
    flexible = api.flexible(version)
    decode_req, _ = compile_message(api.request, version, flexible)
    _, encode_resp = compile_struct(api.response, version, flexible)
    return decode_req, encode_resp


@functools.lru_cache(maxsize=None)
def _request_encoder(api_key: int, version: int):
    api = apis.BY_KEY[api_key]
    return compile_message(api.request, version, api.flexible(version))[1]


@functools.lru_cache(maxsize=None)
def _response_decoder(api_key: int, version: int):
    api = apis.BY_KEY[api_key]
    return compile_message(api.response, version, api.flexible(version))[0]


def decode_request(header: RequestHeader, payload) -> dict:
    return codecs(header.api_key, header.api_version)[0](payload, header.body_offset)


def response_frame(api_key: int, version: int, correlation_id: int, body: dict) -> Frame:
    """Size-prefixed response: header v0, or v1 for flexible versions (ApiVersions always v0).
    `Spliced` values in the body are counted in the size but left for the sender (`Frame.splices`)."""
    flexible_header = api_key != apis.API_VERSIONS.key and apis.BY_KEY[api_key].flexible(version)
    out = Frame(b"\x00\x00\x00\x00")
    out += I32.pack(correlation_id)
    if flexible_header:
        out.append(0)
    codecs(api_key, version)[1](out, body)
    I32.pack_into(out, 0, len(out) - 4 + (out.spliced_size if out.splices else 0))
    return out


@functools.lru_cache(maxsize=None)
def _response_item_writer(api_key: int, version: int, path: tuple[str, ...]):
    """(encode(out, item), flexible) of the items of the response's array-of-structs field at `path`."""
    api = apis.BY_KEY[api_key]
    fields = api.response
    for name in path:
        fields = next(f for f in fields if f.name == name and f.present(version)).type
    return compile_struct(fields, version, api.flexible(version))[1], api.flexible(version)


def encoded_response_array(api_key: int, version: int, path: tuple[str, ...], items: list[dict]) -> Encoded:
    """`items` of the response's array field at `path` (names from the top, e.g. ("topics", "configs"))
    encoded for this version: an answer may carry it in place of the list, so an array that is the
    same in many answers is encoded once."""
    write_item, flexible = _response_item_writer(api_key, version, path)
    out = bytearray()
    if flexible:
        write_uvarint(out, len(items) + 1)
    else:
        out += I32.pack(len(items))
    for item in items:
        write_item(out, item)
    return Encoded(out)


# ---------------------------------------------------------------- client side (tests, tools)

def request_frame(api_key: int, version: int, correlation_id: int, body: dict, client_id: str = "rocketgate") -> bytes:
    """Size-prefixed request with header v1/v2, for tests and tools that talk to a broker."""
    api = apis.BY_KEY[api_key]
    cid = client_id.encode()
    head = HEADER.pack(api_key, version, correlation_id) + I16.pack(len(cid)) + cid
    if api.flexible(version):
        head += b"\x00"
    encoded = _request_encoder(api_key, version)(body)
    return I32.pack(len(head) + len(encoded)) + head + encoded


def decode_response(api_key: int, version: int, payload) -> tuple[int, dict]:
    """(correlation_id, body) of a response payload (without the size prefix)."""
    correlation_id = I32.unpack_from(payload, 0)[0]
    pos = 4
    if api_key != apis.API_VERSIONS.key and apis.BY_KEY[api_key].flexible(version):
        pos = skip_tagged_fields(payload, pos)
    return correlation_id, _response_decoder(api_key, version)(payload, pos)
