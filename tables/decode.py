"""The schema modes (docs/tables.md): values decoded with the schema registry into a typed `value`
struct column.

    value_schema_id_prefix  each value is Confluent-framed (magic byte 0, 4-byte schema id) and is
                            decoded with the schema of that id
    value_schema_latest     each value is decoded with the latest schema of subject `<topic>-value`
                            (a Confluent frame, when present, is skipped)

AVRO, PROTOBUF and JSON schemas (tables.value_formats). A schema new to the table is converted to an
Iceberg struct and merged into the table's schema (Iceberg schema evolution: fields added, int->long
and float->double promoted); a record that does not decode, or whose schema the table cannot evolve
to, goes to `<topic>~dlq` with the reason (or is dropped: iceberg.invalid.record.action=drop).
The registry is read on the event loop (`prepare`); decoding runs in the writer's worker thread.
"""
from __future__ import annotations

import logging
import struct

from pyiceberg.schema import Schema
from pyiceberg.types import StructType

from semantics.schema_formats import module as format_module
from semantics.schema_registry import references
from tables.layout import table_schema
from tables.value_formats import READERS, DecodeFailure

log = logging.getLogger("rocketgate.tables")
_FRAME = struct.Struct(">bI")
MAX_REASON = 500


class SchemaDecoder:
    def __init__(self, mode: str, topic: str, registry) -> None:
        self.mode = mode
        self.topic = topic
        self.registry = registry
        self.readers: dict[int, object] = {}  # schema id -> its tables.value_formats reader
        self.merged: set[tuple] = set()  # (schema id, shape) whose struct is in the table's schema
        self.refused: dict[tuple, str] = {}  # (schema id, shape) the table cannot take, with the reason (tried once)

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
                shape, value = self._reader(state, schema_id).read(payload)
                if (schema_id, shape) not in self.merged:
                    self._evolve(writer.table, schema_id, shape)
                values.append(value)
                good.append(row)
            except DecodeFailure as exc:
                bad.append((row, str(exc)[:MAX_REASON]))
            except Exception as exc:  # noqa: BLE001 - a converter bug must not hold the table back forever
                log.exception("table topic %s: offset %d/%d cannot be converted", self.topic, row.partition, row.offset)
                bad.append((row, f"cannot be converted: {exc!r}"[:MAX_REASON]))
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

    def _reader(self, state, schema_id: int):
        reader = self.readers.get(schema_id)
        if reader is not None:
            return reader
        if state is None:
            raise DecodeFailure("the gateway runs without a schema registry (--schema-registry-port)")
        schema = state.schema_by_id(schema_id)
        if schema is None:
            raise DecodeFailure(f"schema id {schema_id} is not in the registry")
        kind = (schema.schema_type or "AVRO").upper()
        try:
            parsed = format_module(kind).parse(schema.schema, references.resolve(state, schema.references))
            reader = READERS[kind](parsed)
        except Exception as exc:  # noqa: BLE001 - a schema that does not parse or has no table form
            raise DecodeFailure(f"schema id {schema_id} ({kind}) cannot be a table's value: {exc}") from None
        self.readers[schema_id] = reader
        return reader

    def _evolve(self, table, schema_id: int, shape) -> None:
        if (schema_id, shape) in self.refused:
            raise DecodeFailure(self.refused[(schema_id, shape)])
        try:
            self._merge(table, schema_id, shape)
        except DecodeFailure as exc:
            self.refused[(schema_id, shape)] = str(exc)
            raise

    def _merge(self, table, schema_id: int, shape) -> None:
        try:
            value_type = self.readers[schema_id].struct(shape)
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
        self.merged.add((schema_id, shape))


