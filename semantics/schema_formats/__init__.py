"""Schema formats of the registry (AVRO, PROTOBUF, JSON): one module per format, one interface.

Each format module (`avro`, `protobuf`, `jsonschema`) exposes:

    parse(text: str, references: dict[str, str]) -> Parsed
        `references` maps each reference name (as registered: an Avro full name, a .proto import path,
        a JSON Schema $ref URL) to the referenced schema's text, already resolved transitively by the
        registry. Raises SchemaError for anything that is not a valid schema of the format.
    reader_errors(reader: Parsed, writer: Parsed) -> list[str]
        Why data written with `writer` cannot be read with `reader` (empty: it can). The registry
        composes BACKWARD (new reads old), FORWARD (old reads new), FULL and the transitive levels.
    check_payload(parsed: Parsed, payload: bytes) -> None
        Raises SchemaError when `payload` (the bytes after the 5-byte magic/id frame; for PROTOBUF
        starting with Confluent's message-index array) does not decode against the schema.

Optionally `formatted(parsed, fmt) -> str | None`: the schema text for a REST `?format=` value the
format knows (PROTOBUF: `serialized`, a base64 FileDescriptorProto); None for an unknown value.

`Parsed` carries `canonical` (the text stored and compared: registering a schema whose canonical form
is already registered returns the existing id), `normalized` (the form for `normalize=true`), and
`name` (the record name for RecordNameStrategy: Avro full name, first Protobuf message, JSON title).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

FORMATS = {"AVRO": "avro", "PROTOBUF": "protobuf", "JSON": "jsonschema"}


class SchemaError(ValueError):
    """A schema, reference or payload that its format refuses; str() is the message for the client."""


@dataclass
class Parsed:
    schema_type: str
    canonical: str
    normalized: str
    name: str | None
    native: Any = field(default=None, repr=False)  # the format library's own object


def module(schema_type: str):
    """The format module of a registry schemaType ("AVRO" when absent), or SchemaError."""
    name = FORMATS.get((schema_type or "AVRO").upper())
    if name is None:
        raise SchemaError(f"Unknown schema type {schema_type}")
    return importlib.import_module(f"{__name__}.{name}")


def formatted(parsed: Parsed, fmt: str | None) -> str | None:
    """The schema text for `?format=fmt` (None when the format has no such rendering: use the stored text)."""
    render = getattr(module(parsed.schema_type), "formatted", None)
    return render(parsed, fmt) if fmt and render is not None else None


def difference_errors(compare, path_field: str) -> list[str]:
    """Confluent's wording of the incompatible differences `compare()` finds ((kind, path) pairs), as
    its PROTOBUF (`fullPath`) and JSON (`jsonPath`) checkers print them; a chain of types deeper than
    the interpreter's stack is refused, never a crash."""
    try:
        found = compare()
    except RecursionError:
        return ["Schemas nested too deeply to compare"]
    return [f"Found incompatible change: Difference{{{path_field}='{path}', type={kind}}}" for kind, path in found]
