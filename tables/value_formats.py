"""A registry schema as a table's value: its Iceberg struct type and each payload as a Python dict
Arrow takes (docs/tables.md, "Schema modes"). One reader per format, each with
`read(payload) -> (shape, value)` and `struct(shape) -> StructType`: `shape` names the message a
payload holds (Protobuf's message indexes; None for AVRO and JSON, one shape per schema).
ValueError (any message) for what a table cannot hold; DecodeFailure for a payload that does not decode.
"""
from __future__ import annotations

import io
import json
import uuid

import fastavro
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor as FD
from pyiceberg.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, FloatType, IntegerType,
                             ListType, LongType, MapType, NestedField, StringType, StructType, TimestamptzType)

from codec.schema_registry import FrameError, decode_message_indexes
from semantics.schema_formats import SchemaError
from semantics.schema_formats.protobuf import MAX_INDEX_DEPTH, message_descriptor


class DecodeFailure(Exception):
    pass


class _Ids:
    """Placeholder field ids (the table assigns its own when the struct is merged)."""

    def __init__(self) -> None:
        self.n = 1000

    def next(self) -> int:
        self.n += 1
        return self.n


def _struct(fields, ids: _Ids) -> StructType:
    return StructType(*[NestedField(ids.next(), name, typ, required=False) for name, typ in fields])


# --- AVRO ----------------------------------------------------------------------------------------
_AVRO = {"boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
         "double": DoubleType(), "string": StringType(), "bytes": BinaryType(), "enum": StringType(),
         "fixed": BinaryType()}
_AVRO_LOGICAL = {"timestamp-millis": TimestamptzType(), "timestamp-micros": TimestamptzType(), "date": DateType(),
                 "uuid": StringType()}


def avro_type(avro, ids: _Ids):
    if isinstance(avro, list):  # a union: only [null, T] (either order)
        kinds = [a for a in avro if a != "null"]
        if len(kinds) != 1:
            raise ValueError(f"union {avro!r} has more than one non-null branch")
        return avro_type(kinds[0], ids)
    if isinstance(avro, str):
        if avro in _AVRO:
            return _AVRO[avro]
        raise ValueError(f"type {avro!r} is not known here")
    kind, logical = avro.get("type"), avro.get("logicalType")
    if logical == "decimal":
        return DecimalType(avro.get("precision", 38), avro.get("scale", 0))
    if logical in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[logical]
    if kind == "record":
        return _struct([(f["name"], avro_type(f["type"], ids)) for f in avro["fields"]], ids)
    if kind == "array":
        return ListType(ids.next(), avro_type(avro["items"], ids), element_required=False)
    if kind == "map":
        return MapType(ids.next(), StringType(), ids.next(), avro_type(avro["values"], ids), value_required=False)
    if isinstance(kind, (dict, list)) or kind in _AVRO:
        return avro_type(kind, ids)
    raise ValueError(f"type {kind!r} is not known here")


def _plain(datum):
    """Avro values Arrow takes: UUIDs as text; containers walked."""
    if isinstance(datum, dict):
        return {k: _plain(v) for k, v in datum.items()}
    if isinstance(datum, list):
        return [_plain(v) for v in datum]
    if isinstance(datum, uuid.UUID):
        return str(datum)
    return datum


class AvroValues:
    def __init__(self, parsed) -> None:
        self.schema = parsed.native

    def struct(self, shape) -> StructType:
        return avro_type(self.schema, _Ids())

    def read(self, payload: bytes):
        buf = io.BytesIO(payload)
        try:
            datum = fastavro.schemaless_reader(buf, self.schema, None)
        except Exception as exc:  # noqa: BLE001 - fastavro raises EOFError, ValueError, IndexError, ... on bad data
            raise DecodeFailure(f"value does not decode with its schema: {exc!r}") from None
        if buf.tell() != len(payload):
            raise DecodeFailure(f"{len(payload) - buf.tell()} bytes left after the Avro datum")
        return None, _plain(datum)


# --- JSON Schema ---------------------------------------------------------------------------------
_JSON = {"string": StringType(), "integer": LongType(), "number": DoubleType(), "boolean": BooleanType()}


def json_type(schema, ids: _Ids):
    if not isinstance(schema, dict):
        raise ValueError("a boolean schema has no columns")
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != 1:
            raise ValueError(f"type {kind!r} has more than one non-null type")
        kind = kinds[0]
    if kind in _JSON:
        return _JSON[kind]
    if kind == "array":
        return ListType(ids.next(), json_type(schema.get("items", {}), ids), element_required=False)
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties") or {}
        if not props:
            raise ValueError("an object without properties has no columns")
        return _struct([(name, json_type(sub, ids)) for name, sub in props.items()], ids)
    raise ValueError(f"JSON schema {json.dumps(schema)[:100]} has no single type (or uses $ref/anyOf/oneOf)")


def _json_value(doc, typ):
    """`doc` shaped as `typ`: unknown properties left out, numbers as the column's type."""
    if doc is None:
        return None
    if isinstance(typ, StructType):
        if not isinstance(doc, dict):
            raise DecodeFailure(f"expected an object, got {type(doc).__name__}")
        return {f.name: _json_value(doc.get(f.name), f.field_type) for f in typ.fields}
    if isinstance(typ, ListType):
        if not isinstance(doc, list):
            raise DecodeFailure(f"expected an array, got {type(doc).__name__}")
        return [_json_value(v, typ.element_type) for v in doc]
    want = {LongType: int, DoubleType: (int, float), BooleanType: bool, StringType: str}[type(typ)]
    if not isinstance(doc, want) or (isinstance(doc, bool) and not isinstance(typ, BooleanType)):
        raise DecodeFailure(f"expected {typ}, got {json.dumps(doc)[:50]}")
    return float(doc) if isinstance(typ, DoubleType) else doc


class JsonValues:
    def __init__(self, parsed) -> None:
        self.parsed = parsed
        self.type = json_type(parsed.native.schema if hasattr(parsed.native, "schema") else
                              json.loads(parsed.canonical), _Ids())
        if not isinstance(self.type, StructType):
            raise ValueError("the schema is not an object")

    def struct(self, shape) -> StructType:
        return self.type

    def read(self, payload: bytes):
        from semantics.schema_formats.jsonschema import check_payload
        try:
            check_payload(self.parsed, payload)
        except SchemaError as exc:
            raise DecodeFailure(str(exc)) from None
        return None, _json_value(json.loads(payload), self.type)


# --- PROTOBUF ------------------------------------------------------------------------------------
_PROTO = {FD.TYPE_INT32: IntegerType(), FD.TYPE_SINT32: IntegerType(), FD.TYPE_SFIXED32: IntegerType(),
          FD.TYPE_INT64: LongType(), FD.TYPE_SINT64: LongType(), FD.TYPE_SFIXED64: LongType(),
          FD.TYPE_UINT32: LongType(), FD.TYPE_FIXED32: LongType(), FD.TYPE_UINT64: LongType(),
          FD.TYPE_FIXED64: LongType(), FD.TYPE_FLOAT: FloatType(), FD.TYPE_DOUBLE: DoubleType(),
          FD.TYPE_BOOL: BooleanType(), FD.TYPE_STRING: StringType(), FD.TYPE_BYTES: BinaryType(),
          FD.TYPE_ENUM: StringType()}
MAX_PROTO_DEPTH = 16


def proto_type(descriptor, ids: _Ids, depth: int = 0) -> StructType:
    if depth > MAX_PROTO_DEPTH:
        raise ValueError(f"message {descriptor.full_name} nests deeper than {MAX_PROTO_DEPTH} (recursive?)")
    return _struct([(f.name, _proto_field_type(f, ids, depth)) for f in descriptor.fields], ids)


def _proto_field_type(f, ids: _Ids, depth: int):
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return MapType(ids.next(), _proto_single(key, ids, depth), ids.next(), _proto_single(value, ids, depth),
                       value_required=False)
    single = _proto_single(f, ids, depth)
    repeated = f.is_repeated
    return ListType(ids.next(), single, element_required=False) if repeated else single


def _proto_single(f, ids: _Ids, depth: int):
    if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        return proto_type(f.message_type, ids, depth + 1)
    return _PROTO[f.type]


def _proto_value(msg) -> dict:
    out = {}
    for f in msg.DESCRIPTOR.fields:
        value = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = [(k, _proto_scalar(vf, v)) for k, v in value.items()]
        elif f.is_repeated:
            out[f.name] = [_proto_scalar(f, v) for v in value]
        elif f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
            out[f.name] = _proto_value(value) if msg.HasField(f.name) else None
        else:
            out[f.name] = _proto_scalar(f, value)
    return out


def _proto_scalar(f, value):
    if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        return _proto_value(value)
    if f.type == FD.TYPE_ENUM:
        named = f.enum_type.values_by_number.get(value)
        return named.name if named is not None else str(value)
    return value


class ProtobufValues:
    def __init__(self, parsed) -> None:
        self.parsed = parsed

    def _descriptor(self, shape):
        try:
            return message_descriptor(self.parsed, list(shape))
        except SchemaError as exc:
            raise DecodeFailure(str(exc)) from None

    def struct(self, shape) -> StructType:
        return proto_type(self._descriptor(shape), _Ids())

    def read(self, payload: bytes):
        try:
            indexes, body = decode_message_indexes(bytes(payload), max_count=MAX_INDEX_DEPTH)
        except FrameError as exc:
            raise DecodeFailure(f"malformed message index: {exc}") from None
        descriptor = self._descriptor(indexes)
        message = message_factory.GetMessageClass(descriptor)()
        try:
            message.ParseFromString(body)
        except Exception as exc:  # noqa: BLE001 - DecodeError, RuntimeError, ValueError
            raise DecodeFailure(f"value does not decode as {descriptor.full_name}: {exc}") from None
        return tuple(indexes), _proto_value(message)


READERS = {"AVRO": AvroValues, "JSON": JsonValues, "PROTOBUF": ProtobufValues}
