"""Declarative Kafka message schemas and the one generic codec that interprets them.

A schema is a list of `F(name, type, versions, nullable=, tag=, default=)`, as in Kafka's message
JSON (tests/kafka/test_kafka_schemas.py checks ours against kafka-clients). Types: "i8" "i16" "u16" "i32"
"i64" "bool" "f64" "uuid" "str" "bytes" "records", "[T]" (array of a primitive), a list of fields
(array of structs) or `Struct(fields)`. Flexible versions use compact lengths and end every struct
with tagged fields: declared tags decode by tag (absent: default) and are written only when they
differ from their default; unknown tags are skipped. Decoding is lenient (null decodes as None in any
version); encoding a missing or None value writes the default: null where a string, bytes or records
field is `nullable` in that version, else "", b"", [], 0, False or the explicit default.

`compile_message(fields, version, flexible)` turns a schema into a (decode, encode) pair once per
(api, version); the closures are what the hot path calls. Decoded messages are plain dicts.
"""
from __future__ import annotations

import struct
import uuid as _uuid
from typing import Any, Callable

from codec.kafka.encoded import Encoded

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
U16 = struct.Struct(">H")
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


def version_range(versions: str) -> tuple[int, int]:
    """(lowest, highest) of a Kafka versions string: "3+", "2-7" or "5"."""
    if versions.endswith("+"):
        return int(versions[:-1]), 1 << 30
    if "-" in versions:
        lo, hi = versions.split("-")
        return int(lo), int(hi)
    return int(versions), int(versions)


class Struct:
    """The type of a field holding one struct (a plain list of fields is an array of structs)."""

    __slots__ = ("fields",)

    def __init__(self, fields: list) -> None:
        self.fields = fields


class F:
    """One field: name, type, the versions it exists in, the versions in which it may be null, its tag
    when it is a tagged field, and an optional default."""

    __slots__ = ("name", "type", "lo", "hi", "nullable", "tag", "default")

    def __init__(self, name: str, type_, versions: str = "0+", *, nullable: str | None = None,
                 tag: int | None = None, default: Any = None) -> None:
        self.name = name
        self.type = type_
        self.lo, self.hi = version_range(versions)
        self.nullable = version_range(nullable) if nullable else None
        self.tag = tag
        self.default = default

    def present(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= version <= self.nullable[1]


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


def _null(nullable: bool, pos: int):
    """A null string/bytes: None where the field is nullable, else refused as Kafka refuses it."""
    if not nullable:
        raise DecodeError("non-nullable field was serialized as null")
    return None, pos


def _primitive(t: str, flexible: bool, nullable: bool = True):
    """(reader, writer, default when not nullable) for a primitive type name."""
    if t in _FIXED:
        rd, wr = _FIXED[t]
        return rd, wr, (0.0 if t == "f64" else 0)
    if t == "bool":
        return _rd_bool, _wr_bool, False
    if t == "uuid":
        return _rd_uuid, _wr_uuid, ZERO_UUID
    rlen, wlen = _len_rw(flexible)
    if t == "str":
        def rd(buf, pos):
            n, pos = rlen(buf, pos, False)
            if n < 0:
                return _null(nullable, pos)
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
        return rd, wr, ""
    if t in ("bytes", "records"):
        def rd(buf, pos):
            n, pos = rlen(buf, pos, True)
            if n < 0:
                return _null(nullable, pos)
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
        return rd, wr, b""
    raise ValueError(f"unknown type {t}")


_FIXED = {"i8": _fixed(I8), "i16": _fixed(I16), "u16": _fixed(U16), "i32": _fixed(I32), "i64": _fixed(I64),
          "f64": _fixed(F64)}


def _array(item_rd, item_wr, flexible: bool, nullable: bool = True):
    rlen, wlen = _len_rw(flexible)

    def rd(buf, pos):
        n, pos = rlen(buf, pos, True)
        if n < 0:
            if not nullable:  # as Kafka's generated readers: "non-nullable field ... was serialized as null"
                raise DecodeError("non-nullable array was serialized as null")
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
        if v is None or type(v) is Encoded:  # null, or already encoded for this version: as it is
            return wlen(out, -1, True) if v is None else out.extend(v)
        wlen(out, len(v), True)
        for item in v:
            item_wr(out, item)
    return rd, wr


NULL_WHEN_NULLABLE = ("str", "bytes", "records")  # types whose missing value encodes as null when nullable
NULL = "<null>"  # F(default=NULL): a nullable array whose missing or None value is sent as null, not []


def _field_codec(f: F, version: int, flexible: bool):
    """(reader, writer, default) of one field in this version."""
    t = f.type
    if isinstance(t, Struct):
        rd, wr, default = _compile(t.fields, version, flexible)
        if f.nullable_in(version):
            rd, wr, default = _nullable_struct(rd, wr)
    elif isinstance(t, list) or t.startswith("["):  # an array of structs, or of a primitive type
        ird, iwr, _ = _compile(t, version, flexible) if isinstance(t, list) else _primitive(t[1:-1], flexible, False)
        rd, wr = _array(ird, iwr, flexible, f.nullable_in(version))
        default = []
    else:
        rd, wr, default = _primitive(t, flexible, f.nullable_in(version))
        if t in NULL_WHEN_NULLABLE and f.nullable_in(version):
            default = None
    if f.default is not None:
        default = None if f.default is NULL else f.default
    return rd, wr, default


def _nullable_struct(rd, wr):
    """A nullable struct is an int8 marker (-1: null, 1: present) before the struct, as Kafka's
    generated code writes it."""
    marker_rd, marker_wr = _fixed(I8)

    def read(buf, pos):
        marker, pos = marker_rd(buf, pos)
        return (None, pos) if marker < 0 else rd(buf, pos)

    def write(out, v):
        marker_wr(out, -1 if v is None else 1)
        if v is not None:
            wr(out, v)

    return read, write, None


def _compile(fields: list[F], version: int, flexible: bool):
    """(decode(buf, pos) -> (dict, pos), encode(out, dict), default dict) for this version."""
    plan = []
    tagged = {}
    for f in fields:
        if not f.present(version):
            continue
        rd, wr, default = _field_codec(f, version, flexible)
        if f.tag is None:
            plan.append((f.name, rd, wr, default))
        elif flexible:
            tagged[f.tag] = (f.name, rd, wr, default)
    tags = sorted(tagged)
    defaults = {name: default for name, _rd, _wr, default in plan}
    defaults.update((name, default) for name, _rd, _wr, default in tagged.values())

    def read_tagged(buf, pos, obj):
        for name, _rd, _wr, default in tagged.values():
            obj[name] = default.copy() if isinstance(default, (list, dict)) else default
        n, pos = read_uvarint(buf, pos)
        for _ in range(n):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise DecodeError("truncated tagged field")
            known = tagged.get(tag)
            if known is not None:
                obj[known[0]], at = known[1](buf, pos)
                if at != end:
                    raise DecodeError(f"tagged field {known[0]} has the wrong size")
            pos = end
        return pos

    def write_tagged(out, obj):
        present = []
        for tag in tags:
            name, _rd, wr, default = tagged[tag]
            v = obj.get(name)
            if v is not None and v != default:
                value = Frame()
                wr(value, v)
                present.append((tag, value))
        write_uvarint(out, len(present))
        for tag, value in present:
            write_uvarint(out, tag)
            write_uvarint(out, len(value))
            out += value

    def decode(buf, pos):
        obj = {}
        for name, rd, _wr, _d in plan:
            obj[name], pos = rd(buf, pos)
        if tagged:
            pos = read_tagged(buf, pos, obj)
        elif flexible:
            pos = skip_tagged_fields(buf, pos)
        return obj, pos

    def encode(out, obj):
        get = obj.get
        for name, _rd, wr, default in plan:
            v = get(name, default)
            wr(out, default if v is None else v)
        if tagged:
            write_tagged(out, obj)
        elif flexible:
            out.append(0)

    return decode, encode, defaults


def compile_struct(fields: list[F], version: int, flexible: bool):
    """(decode(buf, pos) -> (dict, pos), encode(out, dict)) for this version."""
    decode, encode, _defaults = _compile(fields, version, flexible)
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
