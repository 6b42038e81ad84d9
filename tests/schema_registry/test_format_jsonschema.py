"""JSON schema format: metaschema checks per draft, $ref references, Confluent's compatibility rules.

The evolution table follows Confluent's "Schema Evolution and Compatibility" (JSON Schema) and its
registry's JSON diff: open content models (additional properties allowed) may lose properties but
not gain them, closed ones the other way round; types may widen, enums grow, bounds loosen.
Payloads come from confluent-kafka's own JSONSerializer (against its mock registry).
"""
from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import given, settings, strategies as st

from semantics.schema_formats import SchemaError, module
from semantics.schema_formats import jsonschema as js
from semantics.schema_formats.jsonschema_compat import differences


def obj(properties, **more):
    return dict(type="object", properties=properties, **more)


S, I, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
CLOSED = {"additionalProperties": False}

# (name, old, new, expected differences, new reads old)
EVOLUTIONS = [
    ("property added to open model", obj({"a": S}), obj({"a": S, "b": S}), {"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"}, False),
    ("property added to closed model", obj({"a": S}, **CLOSED), obj({"a": S, "b": S}, **CLOSED),
     {"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"}, True),
    ("required property added to closed model", obj({"a": S}, **CLOSED), obj({"a": S, "b": S}, required=["b"], **CLOSED),
     {"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"}, False),
    ("required property with default added", obj({"a": S}, **CLOSED),
     obj({"a": S, "b": dict(S, default="x")}, required=["b"], **CLOSED),
     {"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"}, True),
    ("empty-schema property added to open model", obj({"a": S}), obj({"a": S, "b": {}}),
     {"PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"}, True),
    ("property removed from open model", obj({"a": S, "b": S}), obj({"a": S}), {"PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"}, True),
    ("property removed from closed model", obj({"a": S, "b": S}, **CLOSED), obj({"a": S}, **CLOSED),
     {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"}, False),
    ("property added, covered by partially open model", obj({"a": S}, additionalProperties=S),
     obj({"a": S, "b": S}, additionalProperties=S), {"PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                                                      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"}, True),
    ("property added, not covered by partially open model", obj({"a": S}, additionalProperties=S),
     obj({"a": S, "b": I}, additionalProperties=S), {"TYPE_CHANGED",
                                                      "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                                                      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"}, False),
    ("model closed", obj({"a": S}), obj({"a": S}, **CLOSED), {"ADDITIONAL_PROPERTIES_REMOVED"}, False),
    ("model opened", obj({"a": S}, **CLOSED), obj({"a": S}), {"ADDITIONAL_PROPERTIES_ADDED"}, True),
    ("required added", obj({"a": S}), obj({"a": S}, required=["a"]), {"REQUIRED_ATTRIBUTE_ADDED"}, False),
    ("required removed", obj({"a": S}, required=["a"]), obj({"a": S}), {"REQUIRED_ATTRIBUTE_REMOVED"}, True),
    ("integer widened to number", I, N, {"TYPE_EXTENDED"}, True),
    ("number narrowed to integer", N, I, {"TYPE_NARROWED"}, False),
    ("string to integer", S, I, {"TYPE_CHANGED"}, False),
    ("string to string-or-null", S, {"type": ["string", "null"]}, {"SUM_TYPE_EXTENDED"}, True),
    ("string-or-null to string", {"type": ["string", "null"]}, S, {"TYPE_CHANGED"}, False),
    ("oneOf grown", {"oneOf": [S, I]}, {"oneOf": [S, I, {"type": "boolean"}]}, {"SUM_TYPE_EXTENDED"}, True),
    ("oneOf shrunk", {"oneOf": [S, I]}, {"oneOf": [S]}, {"SUM_TYPE_NARROWED"}, False),
    ("allOf shrunk", {"allOf": [obj({"a": S}), obj({"b": S})]}, {"allOf": [obj({"a": S})]}, {"PRODUCT_TYPE_NARROWED"}, True),
    ("allOf grown", {"allOf": [obj({"a": S})]}, {"allOf": [obj({"a": S}), obj({"b": S})]}, {"PRODUCT_TYPE_EXTENDED"}, False),
    ("oneOf to anyOf", {"oneOf": [S, I]}, {"anyOf": [S, I]}, {"COMBINED_TYPE_EXTENDED"}, True),
    ("anyOf to allOf", {"anyOf": [S, I]}, {"allOf": [S, I]}, {"COMBINED_TYPE_CHANGED"}, False),
    ("enum extended", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, {"ENUM_ARRAY_EXTENDED"}, True),
    ("enum narrowed", {"enum": ["a", "b"]}, {"enum": ["a"]}, {"ENUM_ARRAY_NARROWED"}, False),
    ("maxLength increased", dict(S, maxLength=5), dict(S, maxLength=9), {"MAX_LENGTH_INCREASED"}, True),
    ("maxLength decreased", dict(S, maxLength=5), dict(S, maxLength=3), {"MAX_LENGTH_DECREASED"}, False),
    ("minLength added", S, dict(S, minLength=2), {"MIN_LENGTH_ADDED"}, False),
    ("pattern removed", dict(S, pattern="^a"), S, {"PATTERN_REMOVED"}, True),
    ("maximum tightened", dict(N, maximum=10), dict(N, maximum=5), {"MAXIMUM_DECREASED"}, False),
    ("minimum loosened", dict(N, minimum=10), dict(N, minimum=5), {"MINIMUM_DECREASED"}, True),
    ("draft 4 exclusive maximum", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number",
                                   "maximum": 10, "exclusiveMaximum": True},
     {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "maximum": 20, "exclusiveMaximum": True},
     {"EXCLUSIVE_MAXIMUM_INCREASED"}, True),
    ("multipleOf reduced", dict(N, multipleOf=4), dict(N, multipleOf=2), {"MULTIPLE_OF_REDUCED"}, True),
    ("multipleOf expanded", dict(N, multipleOf=2), dict(N, multipleOf=4), {"MULTIPLE_OF_EXPANDED"}, False),
    ("items type changed", {"type": "array", "items": S}, {"type": "array", "items": I}, {"TYPE_CHANGED"}, False),
    ("maxItems removed", {"type": "array", "items": S, "maxItems": 3}, {"type": "array", "items": S},
     {"MAX_ITEMS_REMOVED"}, True),
    ("tuple item added to closed tuple", {"type": "array", "items": [S], "additionalItems": False},
     {"type": "array", "items": [S, I], "additionalItems": False}, {"ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"}, True),
    ("tuple item added to open tuple", {"type": "array", "items": [S]}, {"type": "array", "items": [S, I]},
     {"ITEM_ADDED_TO_OPEN_CONTENT_MODEL"}, False),
    ("not narrowed", {"not": S}, {"not": {"type": ["string", "integer"]}}, {"NOT_TYPE_EXTENDED"}, False),
    ("anything to false", {}, False, {"TYPE_CHANGED"}, False),
    ("false to anything", False, {"type": "string"}, set(), True),
    ("title and description", dict(S, title="a", description="x"), dict(S, title="b", description="y"),
     {"TITLE_CHANGED", "DESCRIPTION_CHANGED"}, True),
    ("recursive reference unchanged", obj({"next": {"$ref": "#"}, "v": S}), obj({"next": {"$ref": "#"}, "v": S}), set(), True),
]


@pytest.mark.parametrize("name,old,new,expected,compatible", EVOLUTIONS, ids=[row[0] for row in EVOLUTIONS])
def test_confluent_json_schema_evolution_rules(name, old, new, expected, compatible):
    before, after = js.parse(json.dumps(old), {}), js.parse(json.dumps(new), {})
    found = {kind for kind, _path in differences(before.native.schema, before.native.resolver,
                                                after.native.schema, after.native.resolver)}
    assert found == expected
    errors = js.reader_errors(after, before)  # BACKWARD: the new schema reads old data
    assert (errors == []) == compatible, errors


def test_difference_paths_point_into_the_schema():
    before = js.parse(json.dumps(obj({"a": obj({"b": S})}, **CLOSED)), {})
    after = js.parse(json.dumps(obj({"a": obj({"b": I})}, **CLOSED)), {})
    assert js.reader_errors(after, before) == [
        "Found incompatible change: Difference{jsonPath='#/properties/a/properties/b', type=TYPE_CHANGED}"]


def test_references_resolve_and_their_changes_count():
    address_v1 = json.dumps(obj({"street": S}, **CLOSED))
    address_v2 = json.dumps(obj({"street": I}, **CLOSED))
    text = json.dumps(obj({"home": {"$ref": "address.json"}}, title="Customer"))
    before, after = js.parse(text, {"address.json": address_v1}), js.parse(text, {"address.json": address_v2})
    assert before.name == "Customer"
    assert js.reader_errors(after, before) == [
        "Found incompatible change: Difference{jsonPath='#/properties/home/properties/street', type=TYPE_CHANGED}"]
    js.check_payload(before, b'{"home": {"street": "Main"}}')
    with pytest.raises(SchemaError, match="street"):
        js.check_payload(before, b'{"home": {"street": 5}}')


def test_a_relative_reference_under_an_id_finds_the_reference_by_its_name():
    text = json.dumps({"$id": "https://example.com/schemas/customer.json", "type": "object",
                       "properties": {"home": {"$ref": "address.json"}}})
    parsed = js.parse(text, {"address.json": json.dumps(obj({"street": S}))})
    with pytest.raises(SchemaError, match="street"):
        js.check_payload(parsed, b'{"home": {"street": 1}}')


def test_a_reference_to_a_drafts_metaschema_resolves_without_the_network():
    parsed = js.parse('{"$ref": "http://json-schema.org/draft-07/schema#"}', {})
    js.check_payload(parsed, b'{"type": "string"}')
    with pytest.raises(SchemaError):
        js.check_payload(parsed, b'{"type": 5}')


def test_canonical_form_sorts_keys_and_drops_whitespace():
    one = js.parse('{"type": "object",\n "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}', {})
    two = js.parse('{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}', {})
    assert one.canonical == two.canonical == two.normalized
    assert one.canonical == '{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}'
    assert module("JSON") is js


@pytest.mark.parametrize("draft", [
    "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
])
def test_each_confluent_draft_is_checked_against_its_metaschema(draft):
    js.parse(json.dumps({"$schema": draft, "type": "string"}), {})
    with pytest.raises(SchemaError, match="Invalid schema"):
        js.parse(json.dumps({"$schema": draft, "type": "strng"}), {})


@pytest.mark.parametrize("text,references,message", [
    ("", {}, "Invalid schema"),
    ("{not json", {}, "Invalid schema"),
    ("[1, 2]", {}, "object or a boolean"),
    ('{"type": 5}', {}, "Invalid schema"),
    ('{"minLength": -1}', {}, "Invalid schema"),
    ('{"$schema": "http://example.com/my-draft", "type": "string"}', {}, "unsupported"),
    ('{"$ref": "missing.json"}', {}, "unresolved reference"),
    ('{"properties": {"a": {"$ref": "#/definitions/nope"}}}', {}, "unresolved reference"),
    ('{"$ref": "a.json"}', {"a.json": "{broken"}, "reference a.json"),
    ('{"type": "number", "maximum": NaN}', {}, "NaN"),
    ('{"type":"object","properties":{"a":' * 101 + "{}" + "}}" * 101, {}, "nested deeper"),
    ("[" * 100000 + "]" * 100000, {}, "recursion"),
])
def test_invalid_schemas_are_refused(text, references, message):
    with pytest.raises(SchemaError, match=message):
        js.parse(text, references)


ORDER = {"title": "Order", "type": "object", "additionalProperties": False,
         "properties": {"id": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}, "required": ["id"]}


def test_payloads_from_confluents_serializer_validate_and_bad_ones_are_refused():
    registry = SchemaRegistryClient.new_client({"url": "mock://formats"})
    serializer = JSONSerializer(json.dumps(ORDER), registry)
    framed = serializer({"id": "o-1", "qty": 2}, SerializationContext("orders", MessageField.VALUE))
    parsed = js.parse(json.dumps(ORDER), {})
    js.check_payload(parsed, framed[5:])
    for payload, why in ((b'{"qty": 2}', "required"), (b'{"id": "o", "qty": 0}', "minimum"),
                         (b'{"id": "o", "extra": 1}', "Additional properties"), (b'{"id": ', "Invalid JSON"),
                         (b"\xff\xfe", "Invalid JSON"), (b"", "Invalid JSON")):
        with pytest.raises(SchemaError, match=why):
            js.check_payload(parsed, payload)


JSON_WORDS = ['{', '}', '[', ']', ':', ',', '"type"', '"object"', '"properties"', '"$ref"', '"#"', '"items"',
              '"allOf"', '"enum"', '1', 'true', 'null', '"$schema"', '"required"', '"not"', '"a"']


SCHEMA_WORDS = ["type", "properties", "items", "$ref", "allOf", "anyOf", "oneOf", "not", "enum", "required",
                "additionalProperties", "patternProperties", "maximum", "minLength", "prefixItems", "a"]
SCHEMA_VALUES = st.sampled_from(["string", "integer", "object", "array", "#", "^a", "a"]) | st.integers(-2, 5)
RANDOM_SCHEMAS = st.recursive(st.none() | st.booleans() | SCHEMA_VALUES,
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                                  st.sampled_from(SCHEMA_WORDS), inner, max_size=4),
                              max_leaves=16).map(json.dumps)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(JSON_WORDS), max_size=40).map("".join),
                 RANDOM_SCHEMAS))
def test_random_text_raises_nothing_but_schema_error(text):
    try:
        parsed = js.parse(text, {})
    except SchemaError:
        return
    js.reader_errors(parsed, parsed)
    try:
        js.check_payload(parsed, text.encode())
    except SchemaError:
        pass


@settings(max_examples=300, deadline=None)
@given(RANDOM_SCHEMAS, RANDOM_SCHEMAS)
def test_comparing_any_two_valid_schemas_answers_a_list(old, new):
    try:
        before, after = js.parse(old, {}), js.parse(new, {})
    except SchemaError:
        return
    assert isinstance(js.reader_errors(after, before), list)
    assert js.reader_errors(before, before) == []
