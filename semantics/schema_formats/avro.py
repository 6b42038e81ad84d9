"""AVRO schemas for the registry: parsed by fastavro, compared by Avro's schema resolution rules.

`canonical` is the schema's JSON without whitespace (Confluent's canonical string: registering the same
text again, however indented, finds its id); `normalized` (normalize=true) also sorts every object's
keys, so key order stops mattering; Avro's Parsing Canonical Form (fastavro) is not used for identity
because it drops defaults, which schema resolution depends on.
"""
from __future__ import annotations

import io
import json

import fastavro
from fastavro.schema import SchemaParseException, UnknownType

from semantics.schema_formats import Parsed, SchemaError

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
# Avro's promotions: the writer's type (key) is readable as any of these reader types.
PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
              "string": {"bytes"}, "bytes": {"string"}}


def _load(text: str, what: str):
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise SchemaError(f"Invalid schema{what}: {exc}") from None


def _parse_json(obj, named: dict):
    try:
        return fastavro.parse_schema(obj, named_schemas=named)
    except UnknownType as exc:
        raise SchemaError(f"Invalid schema: unknown type {exc}") from None
    except (SchemaParseException, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SchemaError(f"Invalid schema: {exc}") from None


def parse(text: str, references: dict[str, str]) -> Parsed:
    """Parse `text` with the named types of `references` known (each reference parsed first, in an
    order where every one's own dependencies come before it)."""
    obj = _load(text, "")
    named: dict = {}
    pending = [(name, _load(ref, f" reference {name}")) for name, ref in references.items()]
    while pending:  # the registry resolves references transitively; parse them in dependency order
        left = []
        for name, ref_obj in pending:
            try:
                fastavro.parse_schema(ref_obj, named_schemas=named)
            except UnknownType:
                left.append((name, ref_obj))
            except (SchemaParseException, ValueError, TypeError, KeyError, AttributeError) as exc:
                raise SchemaError(f"Invalid schema reference {name}: {exc}") from None
        if len(left) == len(pending):
            raise SchemaError(f"Invalid schema reference {left[0][0]}: it names an unknown type")
        pending = left
    parsed = _parse_json(obj, named)
    canonical = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    normalized = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    name = parsed.get("name") if isinstance(parsed, dict) and parsed.get("type") in ("record", "enum", "fixed") \
        else None
    return Parsed("AVRO", canonical, normalized, name, native=parsed)


def check_payload(parsed: Parsed, payload: bytes) -> None:
    """SchemaError unless `payload` is exactly one datum of the schema (Avro binary, no trailing bytes)."""
    buf = io.BytesIO(payload)
    try:
        fastavro.schemaless_reader(buf, parsed.native, None)
    except Exception as exc:  # noqa: BLE001 - fastavro raises EOFError, ValueError, IndexError, ... on bad data
        raise SchemaError(f"payload does not decode as {parsed.name or 'the schema'}: {exc!r}") from None
    if buf.tell() != len(payload):
        raise SchemaError(f"{len(payload) - buf.tell()} bytes left after the datum")


def reader_errors(reader: Parsed, writer: Parsed) -> list[str]:
    """Why data written with `writer` cannot be read with `reader` (Avro's schema resolution)."""
    names = dict(_named(writer.native))
    names_r = dict(_named(reader.native))
    checker = _Resolution(names_r, names)
    checker.check(reader.native, writer.native, "/")
    return checker.errors


def _named(parsed) -> dict:
    return parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}


def _type_of(schema) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        return str(schema.get("type"))
    return str(schema)


class _Resolution:
    def __init__(self, reader_names: dict, writer_names: dict) -> None:
        self.reader_names = reader_names
        self.writer_names = writer_names
        self.errors: list[str] = []
        self.seen: set[tuple[str, str]] = set()  # named pairs under check: recursive types end here

    @staticmethod
    def _resolve(schema, names: dict):
        """The definition a schema stands for: named references looked up, {"type": X} unwrapped."""
        for _ in range(100):
            if isinstance(schema, str) and schema not in PRIMITIVES and schema in names:
                schema = names[schema]
            elif isinstance(schema, dict) and (isinstance(schema.get("type"), (dict, list))
                                               or schema.get("type") in PRIMITIVES or schema.get("type") in names):
                schema = schema["type"]
            else:
                break
        return schema

    def check(self, reader, writer, path: str) -> None:
        reader = self._resolve(reader, self.reader_names)
        writer = self._resolve(writer, self.writer_names)
        rt, wt = _type_of(reader), _type_of(writer)
        if wt == "union":
            for i, branch in enumerate(writer):
                self.check(reader, branch, f"{path}{i}/")
            return
        if rt == "union":
            for branch in reader:
                probe = _Resolution(self.reader_names, self.writer_names)
                probe.seen = set(self.seen)
                probe.check(branch, writer, path)
                if not probe.errors:
                    return
            self.errors.append(f"{path}: reader union lacks writer type {_show(writer)}")
            return
        if rt != wt:
            if wt in PROMOTIONS and rt in PROMOTIONS[wt]:
                return
            self.errors.append(f"{path}: reader type {rt} cannot read writer type {wt}")
            return
        if rt in PRIMITIVES:
            return
        if rt in ("record", "enum", "fixed") and not self._same_name(reader, writer, path):
            return
        getattr(self, f"_{rt}", lambda *a: None)(reader, writer, path)

    def _same_name(self, reader: dict, writer: dict, path: str) -> bool:
        r, w = reader["name"], writer["name"]
        aliases = set(reader.get("aliases") or ())
        if r == w or w in aliases or r.rsplit(".", 1)[-1] == w.rsplit(".", 1)[-1] or \
                w.rsplit(".", 1)[-1] in {a.rsplit(".", 1)[-1] for a in aliases}:
            return True
        self.errors.append(f"{path}: reader name {r} does not match writer name {w}")
        return False

    def _record(self, reader: dict, writer: dict, path: str) -> None:
        pair = (reader["name"], writer["name"])
        if pair in self.seen:
            return
        self.seen.add(pair)
        written = {f["name"]: f for f in writer["fields"]}
        for field in reader["fields"]:
            names = [field["name"], *(field.get("aliases") or ())]
            match = next((written[n] for n in names if n in written), None)
            if match is None:
                if "default" not in field:
                    self.errors.append(f"{path}{field['name']}: reader field {field['name']} has no default "
                                       "and is missing from the writer")
                continue
            self.check(field["type"], match["type"], f"{path}{field['name']}/")

    def _enum(self, reader: dict, writer: dict, path: str) -> None:
        missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
        if missing and reader.get("default") is None:
            self.errors.append(f"{path}: reader enum {reader['name']} lacks writer symbols {missing}")

    def _fixed(self, reader: dict, writer: dict, path: str) -> None:
        if reader["size"] != writer["size"]:
            self.errors.append(f"{path}: fixed size {writer['size']} read as size {reader['size']}")

    def _array(self, reader: dict, writer: dict, path: str) -> None:
        self.check(reader["items"], writer["items"], f"{path}items/")

    def _map(self, reader: dict, writer: dict, path: str) -> None:
        self.check(reader["values"], writer["values"], f"{path}values/")


def _show(schema) -> str:
    t = _type_of(schema)
    return schema.get("name", t) if isinstance(schema, dict) else str(t)
