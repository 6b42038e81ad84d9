"""The schema registry's layouts, in Confluent's format: the magic-byte frame of a serialized record,
the Protobuf message-index array after it, and the JSON keys and values of the compacted `_schemas`
topic (fields in the order Confluent writes them: `SCHEMAS_KEYS`, `SCHEMAS_VALUES`).
Hot path: codec.schema_registry."""
from __future__ import annotations

import json

from construct import Adapter, Array, Check, Const, GreedyBytes, Int8sb, Int32sb, Rebuild, Struct, ZigZag, len_, this

from codec.formats.common import CompactJsonUtf8, register

MAX_MESSAGE_INDEXES = 100  # more is refused as a corrupt frame (codec.schema_registry.decode_message_indexes)

SchemaRegistryFrame = register("SchemaRegistryFrame", "Schema registry", Struct(
    "magic" / Const(0, Int8sb) * "magic byte 0 (another byte: not a framed record)",
    "schema_id" / Int32sb * "the registry's schema id",
    "payload" / GreedyBytes * "the Avro binary, the JSON text, or a ProtobufPayload",
), "Kafka record keys and values serialized by Confluent-compatible serializers",
    "The frame every Confluent serializer writes; the registry itself only serves the ids.")


class _MessageIndexes(Adapter):
    """Indexes of the message type in the .proto (outermost first); the common [0] is count 0."""

    def _decode(self, obj, context, path):
        return list(obj.indexes) if obj.count else [0]

    def _encode(self, obj, context, path):
        return {"indexes": [] if list(obj) == [0] else list(obj)}


ProtobufMessageIndexes = register("ProtobufMessageIndexes", "Schema registry", _MessageIndexes(Struct(
    "count" / Rebuild(ZigZag, len_(this.indexes)) * "zigzag varint: number of indexes; 0 alone means [0]",
    Check(lambda ctx: 0 <= ctx.count <= MAX_MESSAGE_INDEXES) * f"a count outside 0..{MAX_MESSAGE_INDEXES} is refused",
    "indexes" / Array(this.count, ZigZag) * "zigzag varints: message index in the file, then in each nesting",
    Check(lambda ctx: all(i >= 0 for i in ctx.indexes)) * "a negative index is refused",
)), "start of a PROTOBUF payload", "Which message of the schema's .proto the bytes are (Confluent's "
    "MessageIndexes, written with Kafka's record varints).")

ProtobufPayload = register("ProtobufPayload", "Schema registry", Struct(
    "message_indexes" / ProtobufMessageIndexes * "the ProtobufMessageIndexes",
    "message" / GreedyBytes * "the serialized Protobuf message",
), "the payload of a SchemaRegistryFrame of a PROTOBUF schema", "A Protobuf record after the 5-byte frame.")

# keytype: (fields after "keytype", the "magic" the key ends with); every key is keytype, fields, magic
SCHEMAS_KEYS = {
    "SCHEMA": (("subject", "version"), 1),
    "CONFIG": (("subject",), 0),  # subject null: the global level
    "MODE": (("subject",), 0),  # subject null: the global mode
    "DELETE_SUBJECT": (("subject",), 0),
    "CLEAR_SUBJECT": (("subject",), 0),
    "NOOP": ((), 0),
}
# keytype: the value's fields in written order; "?" marks one left out when absent (None)
SCHEMAS_VALUES = {
    "SCHEMA": ("subject", "version", "id", "schemaType?", "references?", "schema", "deleted"),
    "CONFIG": ("compatibilityLevel",),
    "MODE": ("mode",),
    "DELETE_SUBJECT": ("subject", "version"),
    "CLEAR_SUBJECT": ("subject",),
}


class _SchemasKey(Adapter):
    """{"keytype": ..., "subject": ..., "version": ...} ↔ the key JSON in SCHEMAS_KEYS' order."""

    def _decode(self, obj, context, path):
        if not isinstance(obj, dict) or obj.get("keytype") not in SCHEMAS_KEYS:
            raise ValueError(f"not a _schemas key: {obj!r:.80}")
        return obj

    def _encode(self, obj, context, path):
        fields, magic = SCHEMAS_KEYS[obj["keytype"]]
        return {"keytype": obj["keytype"], **{f: obj.get(f) for f in fields}, "magic": magic}


class _SchemasValue(Adapter):
    """The value JSON in SCHEMAS_VALUES' order for the keytype given as context (`keytype=`);
    empty or "null" bytes parse as None, a tombstone (Karapace writes them so)."""

    def _decode(self, obj, context, path):
        if obj.strip() in (b"", b"null", b"NULL"):
            return None
        value = json.loads(obj)
        if not isinstance(value, dict):
            raise ValueError("a _schemas value is a JSON object")
        return value

    def _encode(self, obj, context, path):
        if obj is None:
            raise ValueError("a tombstone is a null record value, not bytes")
        out = {}
        for field in SCHEMAS_VALUES[context.keytype]:
            name = field.rstrip("?")
            if not field.endswith("?") or obj.get(name) is not None:
                out[name] = obj.get(name)
        return json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode()


def _example_key(keytype: str) -> str:
    fields, magic = SCHEMAS_KEYS[keytype]
    shown = {"subject": "S|null" if keytype in ("CONFIG", "MODE") else "S", "version": "V"}
    parts = [f'"keytype":"{keytype}"'] + [f'"{f}":{shown[f]}' for f in fields] + [f'"magic":{magic}']
    return "{" + ",".join(parts) + "}"


SchemasKey = register("SchemasKey", "Schema registry", _SchemasKey(CompactJsonUtf8), "record key in _schemas",
                      "Compact UTF-8 JSON (no spaces, non-ASCII unescaped), fields in this order: "
                      + "; ".join(_example_key(k) for k in SCHEMAS_KEYS)
                      + ". Read in any field order (Karapace writes another); an unknown keytype is skipped.")

SchemasValue = register("SchemasValue", "Schema registry", _SchemasValue(GreedyBytes), "record value in _schemas",
                        "Compact UTF-8 JSON object, its fields by the key's keytype: "
                        + "; ".join(f"{k}: {{{', '.join(v)}}}" for k, v in SCHEMAS_VALUES.items())
                        + ' (? = left out when absent: "schemaType" for AVRO, "references" when none; '
                          'a reference is {"name", "subject", "version"}); NOOP: ignored. '
                          "A null value is a tombstone (SCHEMA: permanently deleted; CONFIG, MODE: removed).")
