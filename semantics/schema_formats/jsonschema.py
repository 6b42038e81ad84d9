"""The registry's JSON format: JSON Schema checked by the `jsonschema` library, with references.

The draft is the schema's `$schema` (4, 6, 7, 2019-09 or 2020-12, as Confluent supports), draft 7
when absent as in Confluent's registry; the schema must pass its draft's metaschema and every `$ref`
must resolve, locally or to a reference (`references` maps the $ref URL, e.g. "address.json", to
the referenced schema's text). canonical = the JSON with sorted keys and no whitespace. Payloads are
JSON documents validated against the schema (formats are annotations, as in Confluent's validator).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urljoin

import jsonschema
import jsonschema_specifications
import referencing
import referencing.exceptions
import referencing.jsonschema

from . import Parsed, SchemaError, difference_errors
from .jsonschema_compat import differences, incompatible

def _dialect_key(uri: str) -> str:
    """A $schema URI without scheme and empty fragment: http:// and https:// name the same draft."""
    return uri.rstrip("#").split("://", 1)[-1]


DRAFTS = {
    _dialect_key(cls.META_SCHEMA.get("$id", cls.META_SCHEMA.get("id", ""))): cls
    for cls in (jsonschema.Draft4Validator, jsonschema.Draft6Validator, jsonschema.Draft7Validator,
                jsonschema.Draft201909Validator, jsonschema.Draft202012Validator)
}
DEFAULT_DRAFT = jsonschema.Draft7Validator
MAX_DEPTH = 200  # JSON nesting of a schema; deeper ones are refused before anything recurses into them


@dataclass
class Compiled:
    schema: object  # the schema as loaded JSON
    validator: object
    resolver: object  # referencing resolver at the schema's base URI


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def load_json(text, what: str):
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, TypeError, RecursionError) as exc:
        raise SchemaError(f"Invalid {what}: {exc}") from None


def _check_depth(document, what: str) -> None:
    """Refuse a schema nested deeper than MAX_DEPTH (measured without recursion)."""
    stack = [(document, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SchemaError(f"Invalid {what}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)


def _draft(schema):
    if not isinstance(schema, dict) or "$schema" not in schema:
        return DEFAULT_DRAFT
    uri = schema["$schema"]
    cls = DRAFTS.get(_dialect_key(uri)) if isinstance(uri, str) else None
    if cls is None:
        raise SchemaError(f"Invalid schema: unsupported $schema {uri!r}")
    return cls


def _resource(schema, draft):
    spec = referencing.jsonschema.specification_with(draft.META_SCHEMA.get("$id", draft.META_SCHEMA.get("id")))
    return referencing.Resource.from_contents(schema, default_specification=spec)


def _refs_in(node, found: list) -> list:
    """Every $ref string in a schema document (iteratively: a deep document must not recurse)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("$ref"), str):
                found.append(item["$ref"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def parse(text: str, references: dict[str, str]) -> Parsed:
    if not isinstance(text, str):
        raise SchemaError("Invalid schema: not a string")
    schema = load_json(text, "schema")
    _check_depth(schema, "schema")
    if not isinstance(schema, (dict, bool)):
        raise SchemaError("Invalid schema: a JSON Schema is an object or a boolean")
    draft = _draft(schema)
    try:
        draft.check_schema(schema)
        resources = []
        for name, ref_text in (references or {}).items():
            ref_schema = load_json(ref_text, f"reference {name}")
            _check_depth(ref_schema, f"reference {name}")
            if not isinstance(ref_schema, (dict, bool)):
                raise SchemaError(f"Invalid reference {name}: not a JSON Schema")
            ref_draft = _draft(ref_schema)
            ref_draft.check_schema(ref_schema)
            resources.append((name, _resource(ref_schema, ref_draft)))
        root = _resource(schema, draft)
        base = root.id() or ""
        if base:  # "$ref": "address.json" under "$id": "https://x/customer.json" means https://x/address.json
            resources += [(urljoin(base, name), resource) for name, resource in resources]
        # the drafts' own metaschemas are known, as to Confluent's loader; nothing is fetched from the network
        registry = jsonschema_specifications.REGISTRY.with_resources(resources).with_resource(base, root)
        resolver = registry.resolver(base_uri=base)
        for ref in _refs_in(schema, []):
            resolver.lookup(ref)
        validator = draft(schema, registry=registry)
    except jsonschema.exceptions.SchemaError as exc:
        raise SchemaError(f"Invalid schema: {exc.message}") from None
    except referencing.exceptions.Unresolvable as exc:
        raise SchemaError(f"Invalid schema: unresolved reference {exc}") from None
    except (referencing.exceptions.CannotDetermineSpecification, ValueError, TypeError,
            KeyError, RecursionError) as exc:
        raise SchemaError(f"Invalid schema: {exc}") from None
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    title = schema.get("title") if isinstance(schema, dict) else None
    return Parsed("JSON", canonical, canonical, title if isinstance(title, str) else None,
                  Compiled(schema, validator, resolver))


def reader_errors(reader: Parsed, writer: Parsed) -> list[str]:
    return difference_errors(lambda: incompatible(differences(writer.native.schema, writer.native.resolver,
                                                              reader.native.schema, reader.native.resolver)),
                             "jsonPath")


def check_payload(parsed: Parsed, payload: bytes) -> None:
    try:
        document = load_json(bytes(payload).decode("utf-8"), "JSON payload")
    except UnicodeDecodeError as exc:
        raise SchemaError(f"Invalid JSON payload: {exc}") from None
    try:
        error = jsonschema.exceptions.best_match(parsed.native.validator.iter_errors(document))
    except (referencing.exceptions.Unresolvable, RecursionError) as exc:
        raise SchemaError(f"Payload cannot be validated: {exc}") from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise SchemaError(f"Payload does not match the schema at #/{where}: {error.message}")
