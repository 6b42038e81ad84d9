"""Confluent's JSON Schema compatibility rules (open and closed content models).

Follows Confluent Schema Registry's json-schema-provider diff (`SchemaDiff`, `ObjectSchemaDiff`,
`ArraySchemaDiff`, `CombinedSchemaDiff`, ...): each schema is seen as the everit kind Confluent
loads it as (object, array, string, number, boolean, null, enum, const, not, combined, empty,
false); `differences(original, update)` lists what changed from the writer's to the reader's
schema and `incompatible` keeps those outside Confluent's COMPATIBLE_CHANGES. An object is an
open content model when it allows any additional property: then adding a property is
incompatible (old data may hold anything under that name) and removing one is compatible.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .jsonschema_kinds import COMPARERS

COMPATIBLE = frozenset("""
ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED
MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED
DEPENDENCY_ARRAY_NARROWED DEPENDENCY_ARRAY_REMOVED DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED
MAX_PROPERTIES_REMOVED MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED
ADDITIONAL_PROPERTIES_EXTENDED PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
MAX_ITEMS_INCREASED MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED UNIQUE_ITEMS_REMOVED
ADDITIONAL_ITEMS_ADDED ADDITIONAL_ITEMS_EXTENDED ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
ITEM_ADDED_TO_CLOSED_CONTENT_MODEL ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ENUM_ARRAY_EXTENDED COMBINED_TYPE_EXTENDED
PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED
""".split())
ANNOTATIONS = ("$schema", "$id", "id", "title", "description", "default", "examples", "$comment",
               "definitions", "$defs", "readOnly", "writeOnly", "deprecated", "format", "$anchor")
OBJECT_WORDS = ("properties", "additionalProperties", "required", "patternProperties", "minProperties",
                "maxProperties", "dependencies", "dependentRequired", "dependentSchemas", "propertyNames")
ARRAY_WORDS = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains")
STRING_WORDS = ("minLength", "maxLength", "pattern")
NUMBER_WORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
KIND_OF_TYPE = {"object": "object", "array": "array", "string": "string", "number": "number",
                "integer": "number", "boolean": "boolean", "null": "null"}


def incompatible(found):
    return [(kind, path) for kind, path in found if kind not in COMPATIBLE]


@dataclass
class _Context:
    original_resolver: object
    update_resolver: object
    path: list = field(default_factory=list)
    found: list = field(default_factory=list)
    seen: set = field(default_factory=set)  # (id, id) pairs being compared: recursive $refs stop

    def add(self, kind, *extra):
        self.found.append((kind, "#/" + "/".join(str(p) for p in self.path + list(extra))))

    def sub(self):
        return _Context(self.original_resolver, self.update_resolver, list(self.path), [], self.seen)

    def compatible(self):
        return not incompatible(self.found)

    def at(self, *parts):
        return _Path(self, parts)


class _Path:
    def __init__(self, ctx, parts):
        self.ctx, self.parts = ctx, parts

    def __enter__(self):
        self.ctx.path.extend(self.parts)

    def __exit__(self, *exc):
        del self.ctx.path[len(self.ctx.path) - len(self.parts):]


def differences(original, original_resolver, update, update_resolver):
    ctx = _Context(original_resolver, update_resolver)
    compare(ctx, original, update)
    return list(dict.fromkeys(ctx.found))


def _deref(schema, resolver, depth=0):
    """The schema a $ref points at (only $ref and annotations beside it), followed to the end."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < 32:
        if any(k not in ANNOTATIONS and k != "$ref" for k in schema):
            break  # keywords beside $ref (2019-09+): compared as written
        resolved = resolver.lookup(schema["$ref"])
        schema, resolver, depth = resolved.contents, resolved.resolver, depth + 1
    return schema, resolver


def kind(schema):
    """(kind, parts) as everit loads the schema; parts for a combined kind are its subschemas."""
    if schema is True or schema == {} or (isinstance(schema, dict) and all(k in ANNOTATIONS for k in schema)):
        return "empty", None
    if schema is False or not isinstance(schema, dict):
        return "false", None
    parts = []
    types = schema.get("type")
    typed = [t for t in ([types] if isinstance(types, str) else types or []) if t in KIND_OF_TYPE]
    if not typed:
        for words, name in ((OBJECT_WORDS, "object"), (ARRAY_WORDS, "array"), (STRING_WORDS, "string"),
                            (NUMBER_WORDS, "number")):
            if any(w in schema for w in words):
                typed = [name]
                break
    if typed:
        parts.append(("typed", typed))
    for word in ("enum", "const", "not", "allOf", "anyOf", "oneOf"):
        if word in schema:
            parts.append((word, schema[word]))
    if not parts:
        return "empty", None
    if len(parts) > 1:
        return "combined", ("allOf", [_only(schema, p) for p in parts])
    word, value = parts[0]
    if word == "typed":
        if len(typed) > 1:
            return "combined", ("anyOf", [dict(schema, type=t) for t in typed])
        return KIND_OF_TYPE[typed[0]], None
    if word in ("allOf", "anyOf", "oneOf"):
        return "combined", (word, value if isinstance(value, list) else [])
    return word, value


def _only(schema, part):
    """One facet of a schema with several (everit's allOf of them)."""
    word, value = part
    annotations = {k: v for k, v in schema.items() if k in ANNOTATIONS}
    if word == "typed":
        return {k: v for k, v in schema.items() if k not in ("enum", "const", "not", "allOf", "anyOf", "oneOf")}
    return dict(annotations, **{word: value})


def compare(ctx, original, update):
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    original, original_resolver = _deref(original, ctx.original_resolver)
    update, update_resolver = _deref(update, ctx.update_resolver)
    pair = (id(original), id(update))
    if pair in ctx.seen:
        return
    outer = ctx.original_resolver, ctx.update_resolver
    ctx.original_resolver, ctx.update_resolver = original_resolver, update_resolver
    ctx.seen.add(pair)
    try:
        _compare_resolved(ctx, original, update)
    finally:
        ctx.seen.discard(pair)
        ctx.original_resolver, ctx.update_resolver = outer


def _compare_resolved(ctx, original, update):
    original_kind, original_parts = kind(original)
    update_kind, update_parts = kind(update)
    if original_kind != "combined" and update_kind == "combined":
        criterion, subschemas = update_parts
        if len(subschemas) == 1 or criterion in ("anyOf", "oneOf"):
            for subschema in subschemas:
                sub = ctx.sub()
                compare(sub, original, subschema)
                if sub.compatible():
                    ctx.found.extend(sub.found)
                    if len(subschemas) > 1:
                        ctx.add("SUM_TYPE_EXTENDED")
                    return
    elif original_kind == "combined" and update_kind != "combined" and len(original_parts[1]) == 1:
        sub = ctx.sub()
        compare(sub, original_parts[1][0], update)
        if sub.compatible():
            ctx.found.extend(sub.found)
            return
    if original_kind != update_kind:
        if original_kind != "false" and update_kind != "empty":
            ctx.add("TYPE_CHANGED")
        return
    if not isinstance(original, dict) or not isinstance(update, dict):
        return
    for word, difference in (("$id", "ID_CHANGED"), ("title", "TITLE_CHANGED"),
                             ("description", "DESCRIPTION_CHANGED"), ("default", "DEFAULT_CHANGED")):
        if original.get(word) != update.get(word):
            ctx.add(difference)
    comparer = COMPARERS.get(original_kind)
    if comparer is not None:
        comparer(ctx, compare, original, update, original_parts, update_parts)
