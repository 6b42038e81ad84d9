"""Shared construct pieces of the layouts: IPv4 hosts, RocketMQ property strings, JSON and
decimal-text documents, Kafka's zigzag varints and tagged fields, and the registry of layouts
(`Layout`) that the docs generator and the agreement tests walk."""
from __future__ import annotations

import dataclasses
import json

from construct import (Adapter, Array, Bytes, Construct, GreedyBytes, GreedyString, NullTerminated, Prefixed,
                       Rebuild, StringEncoded, Struct, VarInt, ZigZag, len_, this)

__all__ = ["IPv4", "PropertiesString", "JsonDocument", "CompactJson", "CompactJsonUtf8", "DecimalText",
           "DecimalTextUntil", "NullableVarBytes", "TaggedFields",
           "Layout", "LAYOUTS", "register", "properties_text", "parse_properties_text"]


class _IPv4(Adapter):
    """4 bytes ↔ dotted quad."""

    def _decode(self, obj, context, path):
        return ".".join(str(b) for b in obj)

    def _encode(self, obj, context, path):
        return bytes(int(p) for p in obj.split("."))


IPv4 = _IPv4(Bytes(4))


def properties_text(props: dict) -> str:
    """name \\x01 value \\x02 for each property (MessageDecoder.messageProperties2String)."""
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


def parse_properties_text(text: str) -> dict:
    """Items split at \\x02, name and value at the first \\x01; an item without \\x01 is skipped."""
    out = {}
    for item in text.split("\x02"):
        name, sep, value = item.partition("\x01")
        if sep:
            out[name] = value
    return out


class _Properties(Adapter):
    def _decode(self, obj, context, path):
        return parse_properties_text(obj)

    def _encode(self, obj, context, path):
        return properties_text(obj)


def PropertiesString(length_field: Construct) -> Construct:
    """A RocketMQ properties string (UTF-8 of name\\x01value\\x02...) after its length, as a dict."""
    from construct import PascalString
    return _Properties(PascalString(length_field, "utf8"))


class _Json(Adapter):
    def _decode(self, obj, context, path):
        return json.loads(obj.decode("utf-8")) if obj.strip() else None

    def _encode(self, obj, context, path):
        return json.dumps(obj, ensure_ascii=False, indent=1).encode()


JsonDocument = _Json(GreedyBytes)


class _CompactJson(Adapter):
    """UTF-8 JSON without spaces (json.dumps with separators (",", ":")); non-ASCII escaped unless
    `ensure_ascii` is False."""

    def __init__(self, subcon, ensure_ascii: bool = True):
        super().__init__(subcon)
        self.ensure_ascii = ensure_ascii

    def _decode(self, obj, context, path):
        return json.loads(obj)

    def _encode(self, obj, context, path):
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=self.ensure_ascii).encode()


CompactJson = _CompactJson(GreedyBytes)
CompactJsonUtf8 = _CompactJson(GreedyBytes, ensure_ascii=False)


class _Decimal(Adapter):
    def _decode(self, obj, context, path):
        return int(obj)

    def _encode(self, obj, context, path):
        return str(int(obj))


DecimalText = _Decimal(GreedyString("ascii"))


def DecimalTextUntil(term: bytes) -> Construct:
    """ASCII decimal ended by `term` (consumed, not part of the number)."""
    return _Decimal(StringEncoded(NullTerminated(GreedyBytes, term=term), "ascii"))


class _NullableBlob(Adapter):
    """Kafka record field: zigzag varint length (-1 = null), then the bytes."""

    def _decode(self, obj, context, path):
        return None if obj.length < 0 else obj.data

    def _encode(self, obj, context, path):
        return {"length": -1, "data": b""} if obj is None else {"length": len(obj), "data": obj}


NullableVarBytes = _NullableBlob(Struct("length" / ZigZag, "data" / Bytes(lambda ctx: max(ctx.length, 0))))

TaggedFields = Struct(
    "count" / Rebuild(VarInt, len_(this.fields)) * "number of tagged fields (unsigned varint)",
    "fields" / Array(this.count, Struct(
        "tag" / VarInt * "tag number (unsigned varint)",
        "data" / Prefixed(VarInt, GreedyBytes) * "unsigned varint size, then the field's bytes",
    )),
)



@dataclasses.dataclass(frozen=True)
class Layout:
    """One declared layout: its construct, where it lives and what it is (for docs/formats.md)."""

    name: str
    family: str
    construct: Construct
    where: str
    doc: str


LAYOUTS: list[Layout] = []


def register(name: str, family: str, construct: Construct, where: str, doc: str) -> Construct:
    LAYOUTS.append(Layout(name, family, construct, where, doc))
    return construct
