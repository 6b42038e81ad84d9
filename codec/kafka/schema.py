"""Declarative Kafka message schemas and the one generic codec that interprets them.

A schema is a list of fields, `F(name, type, versions)`. Types: "i8" "i16" "i32" "i64" "bool" "f64"
"uuid" "str" "nstr" "bytes" "nbytes" "records", "[T]" for an array of a primitive T, or a list of
fields for an array of structs. In flexible versions strings, bytes and arrays use the compact
(length + 1, unsigned varint) forms and every struct ends with tagged fields. Unknown tagged fields
are skipped on decode and never written (we use none). Nullable strings/bytes/arrays decode -1 (or
compact 0) as None and encode None as null, so one type covers both nullabilities.

`compile_message(fields, version, flexible)` turns a schema into a (decode, encode) pair once per
(api, version); the closures are what the hot path calls. Decoded messages are plain dicts; encode
fills missing keys with the field default (0, "", [], False or the explicit default).
"""
from __future__ import annotations

import struct
import uuid as _uuid
from typing import Any, Callable

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
F64 = struct.Struct(">d")
U32 = struct.Struct(">I")

ZERO_UUID = b"\x00" * 16


class DecodeError(ValueError):
    """The bytes are not a valid message of the expected schema."""


class Spliced:
    """A bytes value of known length that the encoder does not copy: its `parts` are opaque to the
    codec, and whoever sends the encoded `Frame` writes them in its gap (the gateway sends stored
    record batches straight from the CommitLog file)."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list, size: int) -> None:
        self.parts, self.size = parts, size

    def __len__(self) -> int:
        return self.size


class Frame(bytearray):
    """Encoded bytes plus `splices`: [(position, Spliced)], each to be sent at that position."""

    def __init__(self, initial=b"") -> None:
        super().__init__(initial)
        self.splices: list[tuple[int, Spliced]] = []

    @property
    def spliced_size(self) -> int:
        return sum(sp.size for _at, sp in self.splices)


class F:
    """One field: name, type, versions "a+" or "a-b", optional default."""

    __slots__ = ("name", "type", "lo", "hi", "default")

    def __init__(self, name: str, type_, versions: str = "0+", default: Any = None) -> None:
        self.name = name
        self.type = type_
        if versions.endswith("+"):
            self.lo, self.hi = int(versions[:-1]), 1 << 30
        elif "-" in versions:
            lo, hi = versions.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(versions)
        self.default = default


# ---------------------------------------------------------------- varints

def read_uvarint(buf, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def read_varint(buf, pos: int) -> tuple[int, int]:
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def write_uvarint(out: bytearray, v: int) -> None:
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def write_varint(out: bytearray, v: int) -> None:
    write_uvarint(out, (v << 1) ^ (v >> 63))


def uvarint_bytes(v: int) -> bytes:
    out = bytearray()
    write_uvarint(out, v)
    return bytes(out)


def varint_bytes(v: int) -> bytes:
    out = bytearray()
    write_varint(out, v)
    return bytes(out)


def skip_tagged_fields(buf, pos: int) -> int:
    n, pos = read_uvarint(buf, pos)
    for _ in range(n):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise DecodeError("truncated tagged fields")
    return pos


# ---------------------------------------------------------------- primitive readers/writers

def _fixed(st: struct.Struct):
    size = st.size
    unpack = st.unpack_from
    pack = st.pack

    def rd(buf, pos):
        if pos + size > len(buf):
            raise DecodeError("truncated")
        return unpack(buf, pos)[0], pos + size

    def wr(out, v):
        out += pack(v)

    return rd, wr


def _rd_bool(buf, pos):
    if pos >= len(buf):
        raise DecodeError("truncated")
    return buf[pos] != 0, pos + 1


def _wr_bool(out, v):
    out.append(1 if v else 0)


def _rd_uuid(buf, pos):
    if pos + 16 > len(buf):
        raise DecodeError("truncated")
    return bytes(buf[pos:pos + 16]), pos + 16


def _wr_uuid(out, v):
    if isinstance(v, _uuid.UUID):
        v = v.bytes
    out += v or ZERO_UUID


def _len_rw(flexible: bool):
    """Length prefix reader/writer: i16/i32 classic or compact unsigned varint N+1."""
    if flexible:
        def rlen(buf, pos, _wide):
            n, pos = read_uvarint(buf, pos)
            return n - 1, pos

        def wlen(out, n, _wide):
            write_uvarint(out, n + 1)
    else:
        def rlen(buf, pos, wide):
            st = I32 if wide else I16
            if pos + st.size > len(buf):
                raise DecodeError("truncated length")
            return st.unpack_from(buf, pos)[0], pos + st.size

        def wlen(out, n, wide):
            out += (I32 if wide else I16).pack(n)
    return rlen, wlen


def _primitive(t: str, flexible: bool):
    """(reader, writer, default) for a primitive type name."""
    if t in _FIXED:
        rd, wr = _FIXED[t]
        return rd, wr, (0.0 if t == "f64" else 0)
    if t == "bool":
        return _rd_bool, _wr_bool, False
    if t == "uuid":
        return _rd_uuid, _wr_uuid, ZERO_UUID
    rlen, wlen = _len_rw(flexible)
    if t in ("str", "nstr"):
        def rd(buf, pos):
            n, pos = rlen(buf, pos, False)
            if n < 0:
                return None, pos
            end = pos + n
            if end > len(buf):
                raise DecodeError("truncated string")
            try:
                return bytes(buf[pos:end]).decode("utf-8"), end
            except UnicodeDecodeError as exc:
                raise DecodeError("bad utf-8 string") from exc

        def wr(out, v):
            if v is None:
                wlen(out, -1, False)
                return
            b = v.encode("utf-8")
            wlen(out, len(b), False)
            out += b
        return rd, wr, ("" if t == "str" else None)
    if t in ("bytes", "nbytes", "records"):
        def rd(buf, pos):
            n, pos = rlen(buf, pos, True)
            if n < 0:
                return None, pos
            end = pos + n
            if end > len(buf):
                raise DecodeError("truncated bytes")
            return buf[pos:end], end

        def wr(out, v):
            if v is None:
                wlen(out, -1, True)
                return
            wlen(out, len(v), True)
            if type(v) is Spliced:
                out.splices.append((len(out), v))  # `out` is a Frame: the sender fills the gap
            else:
                out += v
        return rd, wr, (b"" if t == "bytes" else None)
    raise ValueError(f"unknown type {t}")


_FIXED = {"i8": _fixed(I8), "i16": _fixed(I16), "i32": _fixed(I32), "i64": _fixed(I64), "f64": _fixed(F64)}


def _array(item_rd, item_wr, flexible: bool):
    rlen, wlen = _len_rw(flexible)

    def rd(buf, pos):
        n, pos = rlen(buf, pos, True)
        if n < 0:
            return None, pos
        if n > len(buf) - pos:  # every element takes at least one byte: refuse absurd counts early
            raise DecodeError("array count out of range")
        items = []
        append = items.append
        for _ in range(n):
            v, pos = item_rd(buf, pos)
            append(v)
        return items, pos

    def wr(out, v):
        if v is None:
            wlen(out, -1, True)
            return
        wlen(out, len(v), True)
        for item in v:
            item_wr(out, item)
    return rd, wr


def compile_struct(fields: list[F], version: int, flexible: bool):
    """(decode(buf, pos) -> (dict, pos), encode(out, dict)) for this version."""
    plan = []
    for f in fields:
        if not (f.lo <= version <= f.hi):
            continue
        t = f.type
        if isinstance(t, list):
            srd, swr = compile_struct(t, version, flexible)
            rd, wr = _array(srd, swr, flexible)
            default = []
        elif t.startswith("["):
            prd, pwr, _ = _primitive(t[1:-1], flexible)
            rd, wr = _array(prd, pwr, flexible)
            default = []
        else:
            rd, wr, default = _primitive(t, flexible)
        if f.default is not None:
            default = f.default
        plan.append((f.name, rd, wr, default))

    def decode(buf, pos):
        obj = {}
        for name, rd, _wr, _d in plan:
            obj[name], pos = rd(buf, pos)
        if flexible:
            pos = skip_tagged_fields(buf, pos)
        return obj, pos

    def encode(out, obj):
        get = obj.get
        for name, _rd, wr, default in plan:
            v = get(name, default)
            wr(out, default if v is None else v)
        if flexible:
            out.append(0)

    return decode, encode


def compile_message(fields: list[F], version: int, flexible: bool) -> tuple[Callable, Callable]:
    """Top-level (decode(bytes, pos) -> dict, encode(dict) -> bytes) pair."""
    dec, enc = compile_struct(fields, version, flexible)

    def decode(buf, pos=0):
        obj, _ = dec(buf, pos)
        return obj

    def encode(obj) -> bytes:
        out = bytearray()
        enc(out, obj)
        return bytes(out)

    return decode, encode
