"""semantics/schema_formats/avro.py: parsing with references, Avro's schema resolution rules as the
registry's reader_errors, and payload checks by fastavro."""
from __future__ import annotations

import io
import json

import fastavro
import pytest

from semantics.schema_formats import SchemaError, avro


def P(obj, refs=None):
    return avro.parse(json.dumps(obj), refs or {})


def rec(*fields, name="U"):
    return P({"type": "record", "name": name, "fields": list(fields)})


def test_canonical_ignores_whitespace_normalized_ignores_key_order():
    a = avro.parse('{"type": "record", "name": "U", "fields": []}', {})
    b = avro.parse('{"name":"U","type":"record","fields":[]}', {})
    assert a.canonical == '{"type":"record","name":"U","fields":[]}' and a.name == "U"
    assert a.canonical != b.canonical and a.normalized == b.normalized


@pytest.mark.parametrize("text", ["{", '{"type":"nope"}', "123", '{"type":"record","name":"X","fields":[{"name":"a","type":"Q"}]}',
                                  '{"type":"enum","name":"E"}'])
def test_invalid_schemas_refused(text):
    with pytest.raises(SchemaError):
        avro.parse(text, {})


def test_references_resolve_named_types():
    user = rec({"name": "a", "type": "int"})
    outer = P({"type": "record", "name": "O", "fields": [{"name": "u", "type": "U"}]}, {"U": user.canonical})
    assert outer.name == "O"
    with pytest.raises(SchemaError):
        P({"type": "record", "name": "O", "fields": [{"name": "u", "type": "U"}]})


def test_field_added_needs_a_default_to_read_old_data():
    old = rec({"name": "a", "type": "int"})
    with_default = rec({"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""})
    without = rec({"name": "a", "type": "int"}, {"name": "b", "type": "string"})
    assert avro.reader_errors(with_default, old) == []
    assert avro.reader_errors(without, old) and "b" in avro.reader_errors(without, old)[0]
    assert avro.reader_errors(old, without) == []  # a removed field is skipped by the reader


@pytest.mark.parametrize("writer,reader,ok", [("int", "long", True), ("int", "double", True), ("long", "float", True),
                                              ("float", "double", True), ("long", "int", False),
                                              ("double", "float", False), ("string", "bytes", True),
                                              ("bytes", "string", True), ("string", "int", False)])
def test_promotions(writer, reader, ok):
    errors = avro.reader_errors(rec({"name": "a", "type": reader}), rec({"name": "a", "type": writer}))
    assert (errors == []) is ok


def test_enum_symbols_unions_and_names():
    ab, a = P({"type": "enum", "name": "E", "symbols": ["A", "B"]}), P({"type": "enum", "name": "E", "symbols": ["A"]})
    assert avro.reader_errors(ab, a) == [] and avro.reader_errors(a, ab)
    a_default = P({"type": "enum", "name": "E", "symbols": ["A"], "default": "A"})
    assert avro.reader_errors(a_default, ab) == []
    assert avro.reader_errors(P(["null", "string"]), P("string")) == []
    assert avro.reader_errors(P("string"), P(["null", "string"]))  # null cannot be read as string
    assert avro.reader_errors(rec(name="V"), rec(name="U"))  # another record name


def test_recursive_types_terminate():
    linked = P({"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]})
    assert avro.reader_errors(linked, linked) == []


def test_check_payload():
    u = rec({"name": "a", "type": "int"}, {"name": "s", "type": "string"})
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, u.native, {"a": 1, "s": "hi"})
    avro.check_payload(u, buf.getvalue())
    for bad in [b"", buf.getvalue()[:-1], buf.getvalue() + b"\x00", b"\x02\xff\xff\xff\xff\xff\xff"]:
        with pytest.raises(SchemaError):
            avro.check_payload(u, bad)
