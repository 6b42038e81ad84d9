"""Schema registry wire formats, sans-I/O: the magic-byte frame of a serialized record and the
records of the compacted `_schemas` topic, in Confluent's format (so a Confluent or Karapace registry
could read the topic the gateway wrote, and the gateway reads theirs).

Frame: 0x00, the schema id as a 4-byte big-endian signed int, then the payload; a PROTOBUF payload
starts with the message-index array (zigzag varints: count, then indexes; the common [0] as one 0 byte).

`_schemas` keys are compact JSON with Confluent's field order (`keytype` first); values are JSON
objects, a tombstone (None) for a permanent delete:
    SCHEMA          {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}
                    -> {"subject","version","id","schema","deleted"[,"schemaType"][,"references"]}
    CONFIG          {"keytype":"CONFIG","subject":S|null,"magic":0} -> {"compatibilityLevel": L}
    MODE            {"keytype":"MODE","subject":S|null,"magic":0}   -> {"mode": M}
    DELETE_SUBJECT  {"keytype":"DELETE_SUBJECT","subject":S,"magic":0} -> {"subject": S, "version": V}
    CLEAR_SUBJECT   {"keytype":"CLEAR_SUBJECT","subject":S,"magic":0}  -> {"subject": S}
    NOOP            {"keytype":"NOOP","magic":0}
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from codec.kafka.schema import DecodeError, read_varint, varint_bytes

MAGIC = 0
FRAME_HEADER = struct.Struct(">bi")
KEYTYPES = ("SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "CLEAR_SUBJECT", "NOOP")


class FrameError(ValueError):
    """Bytes that are not a schema-registry frame (too short, another magic byte, bad indexes)."""


class RecordError(ValueError):
    """A `_schemas` record whose key or value is not Confluent's JSON."""


def frame(schema_id: int, payload: bytes, message_indexes: list[int] | None = None) -> bytes:
    """The framed bytes of `payload` for `schema_id`; `message_indexes` only for PROTOBUF."""
    head = FRAME_HEADER.pack(MAGIC, schema_id)
    if message_indexes is None:
        return head + payload
    return head + encode_message_indexes(message_indexes) + payload


def unframe(data: bytes) -> tuple[int, bytes]:
    """(schema id, payload after the 5-byte header); FrameError when not framed."""
    if len(data) < FRAME_HEADER.size:
        raise FrameError(f"{len(data)} bytes: a framed record has at least {FRAME_HEADER.size}")
    magic, schema_id = FRAME_HEADER.unpack_from(data)
    if magic != MAGIC:
        raise FrameError(f"unknown magic byte {magic & 0xFF}")
    return schema_id, bytes(data[FRAME_HEADER.size:])


def _read_zigzag(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Confluent writes message indexes as Kafka writes record varints)."""
    try:
        return read_varint(data, pos)
    except DecodeError as exc:
        raise FrameError(f"message index: {exc}") from None


def encode_message_indexes(indexes: list[int]) -> bytes:
    if indexes == [0]:
        return b"\x00"
    return varint_bytes(len(indexes)) + b"".join(varint_bytes(i) for i in indexes)


def decode_message_indexes(payload: bytes, max_count: int = 100) -> tuple[list[int], bytes]:
    """(message indexes, the Protobuf message bytes after them) of a PROTOBUF payload."""
    count, pos = _read_zigzag(payload, 0)
    if count == 0:
        return [0], payload[pos:]
    if count < 0 or count > max_count:
        raise FrameError(f"message-index count {count} out of range")
    indexes = []
    for _ in range(count):
        index, pos = _read_zigzag(payload, pos)
        if index < 0:
            raise FrameError(f"negative message index {index}")
        indexes.append(index)
    return indexes, payload[pos:]


# --- `_schemas` records --------------------------------------------------------------------------

@dataclass(frozen=True)
class Key:
    keytype: str
    subject: str | None = None
    version: int | None = None


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def encode_key(key: Key) -> bytes:
    if key.keytype == "SCHEMA":
        return _dumps({"keytype": "SCHEMA", "subject": key.subject, "version": key.version, "magic": 1})
    if key.keytype == "NOOP":
        return _dumps({"keytype": "NOOP", "magic": 0})
    return _dumps({"keytype": key.keytype, "subject": key.subject, "magic": 0})


def decode_key(raw: bytes | None) -> Key:
    try:
        obj = json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"key is not JSON: {exc}") from None
    if not isinstance(obj, dict) or obj.get("keytype") not in KEYTYPES:
        raise RecordError(f"key has no known keytype: {(raw or b'')[:80]!r}")
    subject, version = obj.get("subject"), obj.get("version")
    if subject is not None and not isinstance(subject, str):
        raise RecordError("key subject is not a string")
    if obj["keytype"] == "SCHEMA" and (not isinstance(subject, str) or not _is_int(version)):
        raise RecordError("SCHEMA key needs a subject and an integer version")
    if obj["keytype"] in ("DELETE_SUBJECT", "CLEAR_SUBJECT") and not isinstance(subject, str):
        raise RecordError(f"{obj['keytype']} key needs a subject")
    return Key(obj["keytype"], subject, version if obj["keytype"] == "SCHEMA" else None)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple = ()  # ((name, subject, version), ...)
    deleted: bool = False


def encode_schema_value(v: SchemaValue) -> bytes:
    obj = {"subject": v.subject, "version": v.version, "id": v.id}
    if v.schema_type != "AVRO":
        obj["schemaType"] = v.schema_type
    if v.references:
        obj["references"] = [{"name": n, "subject": s, "version": ver} for n, s, ver in v.references]
    obj["schema"] = v.schema
    obj["deleted"] = v.deleted
    return _dumps(obj)


def decode_value(raw: bytes | None) -> dict | None:
    """The JSON object of a value; None for a tombstone (also Karapace's empty and "null" values)."""
    if raw is None or raw in (b"", b"null", b"NULL"):
        return None
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"value is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RecordError("value is not a JSON object")
    return obj


def decode_schema_value(obj: dict) -> SchemaValue:
    refs = obj.get("references") or []
    if not (isinstance(obj.get("subject"), str) and _is_int(obj.get("version")) and _is_int(obj.get("id"))
            and isinstance(obj.get("schema"), str) and isinstance(refs, list)):
        raise RecordError("SCHEMA value needs subject, version, id and schema")
    references = []
    for r in refs:
        if not (isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("subject"), str)
                and _is_int(r.get("version"))):
            raise RecordError("a reference needs name, subject and version")
        references.append((r["name"], r["subject"], r["version"]))
    return SchemaValue(obj["subject"], obj["version"], obj["id"], obj["schema"],
                       str(obj.get("schemaType") or "AVRO").upper(), tuple(references),
                       bool(obj.get("deleted", False)))


def encode_config_value(level: str) -> bytes:
    return _dumps({"compatibilityLevel": level})


def encode_mode_value(mode: str) -> bytes:
    return _dumps({"mode": mode})


def encode_delete_subject_value(subject: str, version: int) -> bytes:
    return _dumps({"subject": subject, "version": version})


def encode_clear_subject_value(subject: str) -> bytes:
    return _dumps({"subject": subject})
