"""The schema modes (docs/tables.md): values decoded with the schema registry into a typed `value`
struct column.

    value_schema_id_prefix  each value is Confluent-framed (magic byte 0, 4-byte schema id) and is
                            decoded with the schema of that id
    value_schema_latest     each value is decoded with the latest schema of subject `<topic>-value`
                            (a Confluent frame, when present, is skipped)

A schema new to the table is converted to an Iceberg struct and merged into the table's schema
(Iceberg schema evolution: fields added, int->long and float->double promoted); a record that does
not decode, or whose schema the table cannot evolve to, goes to `<topic>~dlq` with the reason (or is
dropped: iceberg.invalid.record.action=drop). AVRO only for now; PROTOBUF and JSON schemas' records go
to the DLQ table with that reason.
The registry is read on the event loop (`prepare`); decoding runs in the writer's worker thread.
"""
from __future__ import annotations

import io
import logging
import struct
import uuid

import fastavro
from pyiceberg.schema import Schema
from pyiceberg.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, FloatType, IntegerType,
                             ListType, LongType, MapType, NestedField, StringType, StructType, TimestamptzType)

from semantics.schema_formats import module as format_module
from semantics.schema_registry import references
from tables.layout import table_schema

log = logging.getLogger("rocketgate.tables")
_FRAME = struct.Struct(">bI")
MAX_REASON = 500


class DecodeFailure(Exception):
    pass


class SchemaDecoder:
    def __init__(self, mode: str, topic: str, registry) -> None:
        self.mode = mode
        self.topic = topic
        self.registry = registry
        self.parsed: dict[int, object] = {}  # schema id -> fastavro parsed schema
        self.merged: set[int] = set()  # schema ids whose struct is in the table's schema

    def initial_schema(self) -> Schema:
        return table_schema(StructType())

    def prepare(self):
        """On the event loop: the registry state caught up, and the latest version for value_schema_latest."""
        if self.registry is None:
            return None, None
        state = self.registry.fresh()
        latest = state.latest(f"{self.topic}-value") if self.mode == "value_schema_latest" else None
        return state, latest

    def decode(self, writer, rows, prepared):
        """(rows decoded, their values, [(row, reason)] not decoded); evolves the table's schema."""
        state, latest = prepared if prepared else (None, None)
        good, values, bad = [], [], []
        for row in rows:
            try:
                schema_id, payload = self._framing(row.value, latest)
                parsed = self._parsed(state, schema_id)
                if schema_id not in self.merged:
                    self._evolve(writer.table, schema_id, parsed)
                values.append(_read(parsed, payload))
                good.append(row)
            except DecodeFailure as exc:
                bad.append((row, str(exc)[:MAX_REASON]))
        return good, values, bad

    def _framing(self, value, latest) -> tuple[int, bytes]:
        if value is None:
            raise DecodeFailure("null value (a tombstone): no schema to decode it with")
        framed = len(value) >= 5 and value[0] == 0
        if self.mode == "value_schema_latest":
            if latest is None:
                raise DecodeFailure(f"subject {self.topic}-value has no schema")
            return latest.id, value[5:] if framed else value
        if not framed:
            raise DecodeFailure("value has no schema id prefix (magic byte 0 and a 4-byte schema id)")
        return _FRAME.unpack_from(value)[1], value[5:]

    def _parsed(self, state, schema_id: int):
        parsed = self.parsed.get(schema_id)
        if parsed is not None:
            return parsed
        if state is None:
            raise DecodeFailure("the gateway runs without a schema registry (--schema-registry-port)")
        schema = state.schema_by_id(schema_id)
        if schema is None:
            raise DecodeFailure(f"schema id {schema_id} is not in the registry")
        if (schema.schema_type or "AVRO").upper() != "AVRO":
            raise DecodeFailure(f"schema id {schema_id} is {schema.schema_type}: table topics decode AVRO only")
        try:
            parsed = format_module("AVRO").parse(schema.schema, references.resolve(state, schema.references)).native
        except Exception as exc:  # noqa: BLE001 - a schema that no longer parses is the record's problem
            raise DecodeFailure(f"schema id {schema_id} does not parse: {exc}") from None
        self.parsed[schema_id] = parsed
        return parsed

    def _evolve(self, table, schema_id: int, parsed) -> None:
        try:
            value_type = iceberg_type(parsed)
        except ValueError as exc:
            raise DecodeFailure(f"schema id {schema_id} has no Iceberg form: {exc}") from None
        if not isinstance(value_type, StructType):
            raise DecodeFailure(f"schema id {schema_id} is not a record: table topics need a record value")
        try:
            with table.update_schema() as update:
                update.union_by_name(table_schema(value_type))
        except Exception as exc:  # noqa: BLE001 - pyiceberg's ValidationError, ResolveError, ...
            raise DecodeFailure(f"schema id {schema_id} is a change Iceberg cannot evolve the table to: {exc}") from None
        log.info("table topic %s: schema id %d merged into the table's schema", self.topic, schema_id)
        self.merged.add(schema_id)


def _read(parsed, payload: bytes):
    buf = io.BytesIO(payload)
    try:
        datum = fastavro.schemaless_reader(buf, parsed, None)
    except Exception as exc:  # noqa: BLE001 - fastavro raises EOFError, ValueError, IndexError, ... on bad data
        raise DecodeFailure(f"value does not decode with its schema: {exc!r}") from None
    if buf.tell() != len(payload):
        raise DecodeFailure(f"{len(payload) - buf.tell()} bytes left after the Avro datum")
    return _plain(datum)


def _plain(datum):
    """Values Arrow takes: UUIDs as text; containers walked."""
    if isinstance(datum, dict):
        return {k: _plain(v) for k, v in datum.items()}
    if isinstance(datum, list):
        return [_plain(v) for v in datum]
    if isinstance(datum, uuid.UUID):
        return str(datum)
    return datum


_PRIMITIVES = {"boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
               "double": DoubleType(), "string": StringType(), "bytes": BinaryType(), "enum": StringType(),
               "fixed": BinaryType()}
_LOGICAL = {"timestamp-millis": TimestamptzType(), "timestamp-micros": TimestamptzType(), "date": DateType(),
            "uuid": StringType()}


class _Ids:
    n = 1000

    def next(self) -> int:
        self.n += 1
        return self.n


def iceberg_type(avro, ids: _Ids | None = None):
    """The Iceberg type of a (fastavro-parsed) Avro schema; ValueError for what has none (a union of
    several non-null types). Field ids are placeholders: the table assigns its own."""
    ids = ids or _Ids()
    if isinstance(avro, list):  # a union: only [null, T] (either order)
        kinds = [a for a in avro if a != "null"]
        if len(kinds) != 1:
            raise ValueError(f"union {avro!r} has more than one non-null branch")
        return iceberg_type(kinds[0], ids)
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro]
        raise ValueError(f"type {avro!r} is not known here")
    kind, logical = avro.get("type"), avro.get("logicalType")
    if logical == "decimal":
        return DecimalType(avro.get("precision", 38), avro.get("scale", 0))
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    if kind == "record":
        return StructType(*[NestedField(ids.next(), f["name"], iceberg_type(f["type"], ids), required=False)
                            for f in avro["fields"]])
    if kind == "array":
        return ListType(ids.next(), iceberg_type(avro["items"], ids), element_required=False)
    if kind == "map":
        return MapType(ids.next(), StringType(), ids.next(), iceberg_type(avro["values"], ids), value_required=False)
    if isinstance(kind, (dict, list)) or kind in _PRIMITIVES:
        return iceberg_type(kind, ids)
    raise ValueError(f"type {kind!r} is not known here")
