"""A message body for people: decoded by its schema when it is framed with a schema id the
registry knows (Confluent's wire format: magic 0, a 4-byte id, then AVRO binary, JSON or protobuf
with its message indexes), shown as JSON; else None and the caller shows text or hex. A body that
does not decode as its schema is shown raw with the reason (never an exception)."""
from __future__ import annotations

import io
import json

import fastavro
from google.protobuf import json_format, message_factory

from codec.schema_registry import FrameError, decode_message_indexes, unframe
from semantics.schema_formats import SchemaError
from semantics.schema_formats.protobuf import MAX_INDEX_DEPTH, message_descriptor


def by_schema(registry, body: bytes) -> tuple[str, str] | None:
    """(encoding label, decoded text), e.g. ("AVRO schema 3", '{"id": 1}'); None when unframed or unknown."""
    if registry is None:
        return None
    try:
        schema_id, payload = unframe(body)
    except FrameError:
        return None
    schema = registry.state.schema_by_id(schema_id)
    if schema is None:
        return None
    label = f"{schema.schema_type} schema {schema_id}"
    try:
        parsed = registry.parsed(schema)
        return label, _decode(schema.schema_type, parsed, payload)
    except Exception as exc:  # noqa: BLE001 - a body that is not its schema's datum is shown raw, with why
        return f"{label}, not decodable: {exc}", payload.hex()


def _decode(schema_type: str, parsed, payload: bytes) -> str:
    if schema_type == "AVRO":
        buf = io.BytesIO(payload)
        datum = fastavro.schemaless_reader(buf, parsed.native, None)
        if buf.tell() != len(payload):
            raise SchemaError(f"{len(payload) - buf.tell()} bytes left after the datum")
        return json.dumps(datum, indent=2, default=_plain, ensure_ascii=False)
    if schema_type == "JSON":
        return json.dumps(json.loads(payload), indent=2, ensure_ascii=False)
    indexes, body = decode_message_indexes(payload, max_count=MAX_INDEX_DEPTH)
    message = message_factory.GetMessageClass(message_descriptor(parsed, indexes))()
    message.ParseFromString(body)
    return json_format.MessageToJson(message, indent=2)


def _plain(value):
    """JSON for what AVRO decodes beyond JSON's types (bytes, decimals, dates, UUIDs)."""
    return value.hex() if isinstance(value, (bytes, bytearray)) else str(value)
