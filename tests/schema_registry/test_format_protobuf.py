"""PROTOBUF schema format: protoc parsing, canonical form, Confluent's compatibility rules, payloads.

The evolution table follows the rules and examples of Confluent's "Schema Evolution and
Compatibility" (Protobuf) and its registry's protobuf diff: each row is (old, new, the difference
types expected, whether new can read old). Payloads come from confluent-kafka's own
ProtobufSerializer (against its in-memory mock registry), so the message-index framing is the
client's, not ours.
"""
from __future__ import annotations

import base64
import importlib
import importlib.resources

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import message_factory
from grpc_tools import protoc
from hypothesis import given, settings, strategies as st

from semantics.schema_formats import SchemaError, module
from semantics.schema_formats import protobuf
from semantics.schema_formats.protobuf_compat import differences

P3 = 'syntax = "proto3";\n'
P2 = 'syntax = "proto2";\n'
DEP = P3 + "package shop.common;\nmessage Money { int64 units = 1; string currency = 2; }\n"
DEP_CHANGED = P3 + "package shop.common;\nmessage Money { string units = 1; string currency = 2; }\n"
DEP_OTHER_PACKAGE = P3 + "package shop.money;\nmessage Money { int64 units = 1; string currency = 2; }\n"

# (name, old, new, old references, new references, expected differences, new reads old)
EVOLUTIONS = [
    ("field added", P3 + "message M { string a = 1; }", P3 + "message M { string a = 1; int32 b = 2; }",
     {}, {}, {"FIELD_ADDED"}, True),
    ("field removed", P3 + "message M { string a = 1; int32 b = 2; }", P3 + "message M { string a = 1; }",
     {}, {}, {"FIELD_REMOVED"}, True),
    ("field renamed", P3 + "message M { string a = 1; }", P3 + "message M { string renamed = 1; }",
     {}, {}, {"FIELD_NAME_CHANGED"}, True),
    ("number renumbered", P3 + "message M { string a = 1; }", P3 + "message M { string a = 2; }",
     {}, {}, {"FIELD_REMOVED", "FIELD_ADDED"}, True),
    ("int32 to int64", P3 + "message M { int32 a = 1; }", P3 + "message M { int64 a = 1; }", {}, {}, set(), True),
    ("uint64 to bool", P3 + "message M { uint64 a = 1; }", P3 + "message M { bool a = 1; }", {}, {}, set(), True),
    ("sint32 to sint64", P3 + "message M { sint32 a = 1; }", P3 + "message M { sint64 a = 1; }", {}, {}, set(), True),
    ("string to bytes", P3 + "message M { string a = 1; }", P3 + "message M { bytes a = 1; }", {}, {}, set(), True),
    ("fixed32 to sfixed32", P3 + "message M { fixed32 a = 1; }", P3 + "message M { sfixed32 a = 1; }",
     {}, {}, set(), True),
    ("fixed64 to sfixed64", P3 + "message M { fixed64 a = 1; }", P3 + "message M { sfixed64 a = 1; }",
     {}, {}, set(), True),
    ("int32 to enum", P3 + "message M { int32 a = 1; }", P3 + "message M { E a = 1; }\nenum E { X = 0; Y = 1; }",
     {}, {}, {"ENUM_ADDED"}, True),
    ("int32 to sint32", P3 + "message M { int32 a = 1; }", P3 + "message M { sint32 a = 1; }",
     {}, {}, {"FIELD_SCALAR_KIND_CHANGED"}, False),
    ("int32 to string", P3 + "message M { int32 a = 1; }", P3 + "message M { string a = 1; }",
     {}, {}, {"FIELD_SCALAR_KIND_CHANGED"}, False),
    ("float to double", P3 + "message M { float a = 1; }", P3 + "message M { double a = 1; }",
     {}, {}, {"FIELD_SCALAR_KIND_CHANGED"}, False),
    ("scalar to message", P3 + "message M { int32 a = 1; }", P3 + "message M { N a = 1; }\nmessage N { int32 x = 1; }",
     {}, {}, {"FIELD_KIND_CHANGED", "MESSAGE_ADDED"}, False),
    ("message type renamed", P3 + "message M { N a = 1; }\nmessage N { int32 x = 1; }",
     P3 + "message M { O a = 1; }\nmessage O { int32 x = 1; }",
     {}, {}, {"FIELD_NAMED_TYPE_CHANGED", "MESSAGE_REMOVED", "MESSAGE_ADDED"}, False),
    ("map value changed", P3 + "message M { map<string, int32> m = 1; }", P3 + "message M { map<string, string> m = 1; }",
     {}, {}, {"FIELD_SCALAR_KIND_CHANGED"}, False),
    ("short to qualified names", P3 + "package p;\nmessage M { N a = 1; message N { int32 x = 1; } }",
     P3 + "package p;\nmessage M { .p.M.N a = 1; message N { int32 x = 1; } }", {}, {}, set(), True),
    ("required field added", P2 + "message M { optional string a = 1; }",
     P2 + "message M { optional string a = 1; required string b = 2; }", {}, {}, {"REQUIRED_FIELD_ADDED"}, False),
    ("required field removed", P2 + "message M { optional string a = 1; required string b = 2; }",
     P2 + "message M { optional string a = 1; }", {}, {}, {"REQUIRED_FIELD_REMOVED"}, False),
    ("one field into a new oneof", P3 + "message M { string a = 1; string b = 2; }",
     P3 + "message M { string a = 1; oneof o { string b = 2; int32 c = 3; } }", {}, {}, {"ONEOF_ADDED"}, True),
    ("two fields into a oneof", P3 + "message M { string a = 1; string b = 2; }",
     P3 + "message M { oneof o { string a = 1; string b = 2; } }",
     {}, {}, {"MULTIPLE_FIELDS_MOVED_TO_ONEOF", "ONEOF_ADDED"}, False),
    ("oneof field added", P3 + "message M { oneof o { string a = 1; } }",
     P3 + "message M { oneof o { string a = 1; int32 b = 2; } }", {}, {}, {"ONEOF_FIELD_ADDED"}, True),
    ("oneof field removed", P3 + "message M { oneof o { string a = 1; int32 b = 2; } }",
     P3 + "message M { oneof o { string a = 1; } }", {}, {}, {"ONEOF_FIELD_REMOVED"}, False),
    ("string optional to repeated", P3 + "message M { optional string a = 1; }", P3 + "message M { repeated string a = 1; }",
     {}, {}, {"FIELD_STRING_OR_BYTES_LABEL_CHANGED"}, True),
    ("message optional to repeated", P3 + "message M { optional N a = 1; }\nmessage N { int32 x = 1; }",
     P3 + "message M { repeated N a = 1; }\nmessage N { int32 x = 1; }", {}, {}, set(), True),
    ("number optional to repeated", P3 + "message M { optional int32 a = 1; }", P3 + "message M { repeated int32 a = 1; }",
     {}, {}, {"FIELD_NUMERIC_LABEL_CHANGED"}, False),
    ("message added before", P3 + "message M { string a = 1; }",
     P3 + "message First { string a = 1; }\nmessage M { string a = 1; }", {}, {}, {"MESSAGE_ADDED", "MESSAGE_MOVED"}, True),
    ("package changed", P3 + "package a;\nmessage M { string a = 1; }", P3 + "package b;\nmessage M { string a = 1; }",
     {}, {}, {"PACKAGE_CHANGED"}, True),
    ("enum constant renamed", P3 + "message M { E e = 1; }\nenum E { A = 0; B = 1; }",
     P3 + "message M { E e = 1; }\nenum E { A = 0; C = 1; }", {}, {}, {"ENUM_CONST_CHANGED"}, True),
    ("imported message changed", P3 + 'import "money.proto";\nmessage M { shop.common.Money price = 1; }',
     P3 + 'import "money.proto";\nmessage M { shop.common.Money price = 1; }', {"money.proto": DEP},
     {"money.proto": DEP_CHANGED}, {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"}, False),
    ("import moved to another package", P3 + 'import "money.proto";\nmessage M { shop.common.Money price = 1; }',
     P3 + 'import "money2.proto";\nmessage M { shop.money.Money price = 1; }', {"money.proto": DEP},
     {"money2.proto": DEP_OTHER_PACKAGE}, set(), True),
    ("local message moved to an import", P3 + "message M { Money price = 1; }\nmessage Money { int64 units = 1; }",
     P3 + 'import "money.proto";\nmessage M { shop.common.Money price = 1; }', {}, {"money.proto": DEP},
     {"MESSAGE_REMOVED", "FIELD_ADDED"}, False),  # the import's Money has one more field
    ("recursive message unchanged", P3 + "message Node { Node next = 1; string v = 2; }",
     P3 + "message Node { Node next = 1; string v = 2; }", {}, {}, set(), True),
]


@pytest.mark.parametrize("name,old,new,old_refs,new_refs,expected,compatible", EVOLUTIONS,
                         ids=[row[0] for row in EVOLUTIONS])
def test_confluent_protobuf_evolution_rules(name, old, new, old_refs, new_refs, expected, compatible):
    before, after = protobuf.parse(old, old_refs), protobuf.parse(new, new_refs)
    found = {kind for kind, _path in differences(before.native.files, before.native.main,
                                                after.native.files, after.native.main)}
    assert found == expected
    errors = protobuf.reader_errors(after, before)  # BACKWARD: the new schema reads old data
    assert (errors == []) == compatible, errors


def test_difference_paths_name_message_and_field_number():
    before = protobuf.parse(P3 + "message Outer { message Inner { int32 a = 1; } }", {})
    after = protobuf.parse(P3 + "message Outer { message Inner { string a = 1; } }", {})
    assert protobuf.reader_errors(after, before) == [
        "Found incompatible change: Difference{fullPath='#/Outer/Inner/1', type=FIELD_SCALAR_KIND_CHANGED}"]


def test_canonical_form_is_the_same_for_short_qualified_and_serialized_schemas():
    short = protobuf.parse(P3 + "package p;\nmessage M {\n  N n = 1;\n  message N { int32 x = 1; }\n}", {})
    qualified = protobuf.parse(P3 + "package p; message M { .p.M.N n = 1; message N { int32 x = 1; } }", {})
    serialized = protobuf.parse(protobuf.serialized(short), {})
    assert short.canonical == qualified.canonical == serialized.canonical
    assert short.name == "p.M"
    assert ".p.M.N n = 1;" in short.canonical


def test_normalized_form_sorts_imports_options_and_fields():
    refs = {"a.proto": P3 + "package a; message A {}", "b.proto": P3 + "package b; message B {}"}
    one = protobuf.parse(P3 + 'import "b.proto";\nimport "a.proto";\noption java_package = "x";\n'
                              'option java_multiple_files = true;\nmessage M { b.B b = 2; a.A a = 1; }', refs)
    two = protobuf.parse(P3 + 'import "a.proto";\nimport "b.proto";\noption java_multiple_files = true;\n'
                              'option java_package = "x";\nmessage M { a.A a = 1; b.B b = 2; }', refs)
    assert one.canonical != two.canonical
    assert one.normalized == two.normalized


def test_rendered_canonical_compiles_back_to_the_same_descriptor():
    text = (P2 + 'package p;\nimport "google/protobuf/timestamp.proto";\noption java_package = "x.y";\n'
            'message A {\n  optional int32 x = 1 [default = 5];\n  required string s = 2 [default = "a\\"b"];\n'
            '  optional group G = 3 { optional int32 y = 1; }\n  repeated int32 p = 4 [packed = true];\n'
            '  optional bytes b = 5 [default = "\\001x"];\n  optional E e = 6 [default = B];\n'
            '  map<string, A> children = 7;\n  oneof o { int32 q = 13; string r = 14; }\n'
            '  optional google.protobuf.Timestamp at = 15 [json_name = "when"];\n'
            '  enum E { option allow_alias = true; A = 0; B = 1; C = 1; reserved 5 to 6; }\n'
            '  extensions 100 to max;\n  reserved 8, 9 to 11;\n  reserved "zz";\n}\n'
            'extend A { optional int32 ext = 100; }\nservice S { rpc M (A) returns (stream A); }\n')
    first = protobuf.parse(text, {})
    again = protobuf.parse(first.canonical, {})
    assert again.canonical == first.canonical
    assert again.native.main == first.native.main


@pytest.mark.parametrize("text,references,message", [
    ("", {}, "empty"),
    ("syntax = \"proto3\"; message M { int32 a = 1 }", {}, "Expected"),
    (P3 + "message M { Unknown a = 1; }", {}, '"Unknown" is not defined'),
    (P3 + "message M { int32 a = 1; string b = 1; }", {}, "already been used"),
    (P3 + 'import "missing.proto";\nmessage M { int32 a = 1; }', {}, "missing.proto"),
    (P3 + 'import "../etc/passwd.proto";\nmessage M {}', {"../etc/passwd.proto": P3}, "Invalid reference name"),
    (P3 + 'import "a.proto";\nmessage M {}', {"a.proto": P3 + 'import "b.proto";', "b.proto": P3 + 'import "a.proto";'},
     "recursively imports"),
    ("syntax = \"proto4\";", {}, "proto4"),
    (P3 + 'import "__schema__.proto";\nmessage M {}', {"__schema__.proto": P3}, "Invalid reference name"),
    (P3 + "message A { " * 100 + " }" * 100, {}, "recursion limit"),
])
def test_invalid_schemas_are_refused_with_protocs_message(text, references, message):
    with pytest.raises(SchemaError, match=message):
        protobuf.parse(text, references)


def test_imports_resolve_from_references_and_well_known_types_need_none():
    parsed = protobuf.parse(P3 + 'package shop;\nimport "money.proto";\nimport "google/protobuf/timestamp.proto";\n'
                                 'import "google/type/date.proto";\n'
                                 'message Order { shop.common.Money price = 1; google.protobuf.Timestamp at = 2;'
                                 ' google.type.Date day = 3; }', {"money.proto": DEP})
    assert parsed.name == "shop.Order"
    assert 'import "money.proto";' in parsed.canonical
    assert module("PROTOBUF") is protobuf


def test_a_reference_chain_deeper_than_the_stack_is_refused_not_crashed():
    depth = 1500
    text = P3 + "\n".join(f"message A{i} {{ A{i + 1} next = 1; }}" for i in range(depth)) + f"\nmessage A{depth} {{}}"
    parsed = protobuf.parse(text, {})
    assert protobuf.reader_errors(parsed, parsed) == ["Schemas nested too deeply to compare"]


def _serialize_with_confluent(parsed, message_name, **fields):
    """Bytes as confluent-kafka's ProtobufSerializer frames them (its mock registry assigns the id)."""
    registry = SchemaRegistryClient.new_client({"url": "mock://formats"})
    message_class = message_factory.GetMessageClass(parsed.native.pool.FindMessageTypeByName(message_name))
    serializer = ProtobufSerializer(message_class, registry, {"use.deprecated.format": False})
    framed = serializer(message_class(**fields), SerializationContext("orders", MessageField.VALUE))
    assert framed[0] == 0
    return framed[5:]


PAYLOAD_SCHEMA = (P3 + 'package shop;\nimport "money.proto";\n'
                  "message Order { string id = 1; shop.common.Money price = 2;\n"
                  "  message Line { string sku = 1; int32 qty = 2; } }\n"
                  "message Refund { string order_id = 1; int64 cents = 2; }\n")


def test_payloads_from_confluents_serializer_decode_and_corrupt_ones_are_refused():
    parsed = protobuf.parse(PAYLOAD_SCHEMA, {"money.proto": DEP})
    order = _serialize_with_confluent(parsed, "shop.Order", id="o-1")
    refund = _serialize_with_confluent(parsed, "shop.Refund", order_id="o-1", cents=250)
    line = _serialize_with_confluent(parsed, "shop.Order.Line", sku="a", qty=2)
    assert order[0] == 0 and refund[:2] == b"\x02\x02" and line[:3] == b"\x04\x00\x00"
    for payload in (order, refund, line):
        protobuf.check_payload(parsed, payload)
    assert protobuf.message_descriptor(parsed, [1]).full_name == "shop.Refund"
    with pytest.raises(SchemaError, match="does not decode"):
        protobuf.check_payload(parsed, refund[:2] + b"\x0a\x09abc")  # a string longer than the payload
    with pytest.raises(SchemaError, match="index"):
        protobuf.check_payload(parsed, b"\x02\x06" + refund[2:])  # message [3]: no such message
    with pytest.raises(SchemaError):
        protobuf.check_payload(parsed, b"")


def test_serialized_format_is_a_base64_descriptor_confluents_deserializer_reads():
    parsed = protobuf.parse(PAYLOAD_SCHEMA, {"money.proto": DEP})
    raw = base64.b64decode(protobuf.serialized(parsed))
    assert b"shop" in raw and protobuf.parse(protobuf.serialized(parsed), {"money.proto": DEP}).canonical == parsed.canonical


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=300),
                 st.lists(st.sampled_from(["syntax", "=", '"proto3"', ";", "message", "M", "{", "}", "int32",
                                           "a", "1", "oneof", "map<", ">", "import", '"x.proto"', "package",
                                           "enum", "option", "(", ")", "[", "]", "repeated", "reserved"]),
                          max_size=40).map(" ".join)))
def test_random_text_raises_nothing_but_schema_error(text):
    try:
        protobuf.parse(text, {})
    except SchemaError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_random_payloads_raise_nothing_but_schema_error(payload):
    parsed = protobuf.parse(PAYLOAD_SCHEMA, {"money.proto": DEP})
    try:
        protobuf.check_payload(parsed, payload)
    except SchemaError:
        pass


def test_what_confluents_serializer_registers_parses_with_its_references(tmp_path, monkeypatch):
    """The serializer registers each import as base64 descriptor and the schema with references by
    import path: exactly what the registry hands to `parse`."""
    (tmp_path / "fmtshop").mkdir()
    (tmp_path / "fmtshop" / "money.proto").write_text(DEP.replace("shop.common", "fmtshop.common"))
    (tmp_path / "fmtshop" / "order.proto").write_text(
        P3 + 'package fmtshop;\nimport "fmtshop/money.proto";\nimport "google/protobuf/timestamp.proto";\n'
             "message Order { string id = 1; fmtshop.common.Money price = 2; google.protobuf.Timestamp at = 3; }\n")
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{tmp_path}", f"-I{include}", f"--python_out={tmp_path}",
                        "fmtshop/money.proto", "fmtshop/order.proto"]) == 0
    monkeypatch.syspath_prepend(str(tmp_path))
    order_pb2 = importlib.import_module("fmtshop.order_pb2")
    registry = SchemaRegistryClient.new_client({"url": "mock://registered"})
    serializer = ProtobufSerializer(order_pb2.Order, registry, {"use.deprecated.format": False})
    framed = serializer(order_pb2.Order(id="x"), SerializationContext("orders", MessageField.VALUE))
    latest = registry.get_latest_version("orders-value")
    assert [r.name for r in latest.schema.references] == ["fmtshop/money.proto"]  # well-known types skipped
    references = {r.name: registry.get_version(r.subject, r.version).schema.schema_str
                  for r in latest.schema.references}
    parsed = protobuf.parse(latest.schema.schema_str, references)
    assert parsed.name == "fmtshop.Order"
    assert 'import "fmtshop/money.proto";' in parsed.canonical
    protobuf.check_payload(parsed, framed[5:])
    text_form = protobuf.parse(parsed.canonical, references)
    assert text_form.canonical == parsed.canonical


FIELD_TYPES = ["int32", "int64", "sint32", "string", "bytes", "bool", "double", "fixed32", "E", "N", "M",
               "map<string, int32>", "map<int32, N>"]


@st.composite
def proto_schemas(draw):
    """Small valid proto3 files: a message M with a nested N, an enum E, fields of every kind, oneofs."""
    def fields(numbers):
        out, oneof = [], []
        for number in numbers:
            kind = draw(st.sampled_from(FIELD_TYPES))
            label = "" if kind.startswith("map") else draw(st.sampled_from(["", "repeated ", "optional "]))
            line = f"{kind} f{number} = {number};"
            if not label and not kind.startswith("map") and draw(st.booleans()):
                oneof.append(line)
            else:
                out.append(label + line)
        if oneof:
            out.append("oneof choice { " + " ".join(oneof) + " }")
        return " ".join(out)

    numbers = draw(st.lists(st.integers(1, 8), unique=True, max_size=6))
    nested = draw(st.lists(st.integers(1, 4), unique=True, max_size=3))
    return (P3 + f"message M {{ {fields(numbers)} message N {{ {fields(nested)} }} }}\n"
            "enum E { ZERO = 0; ONE = 1; }\n")


@settings(max_examples=150, deadline=None)
@given(proto_schemas(), proto_schemas())
def test_comparing_any_two_schemas_answers_a_list(old, new):
    before, after = protobuf.parse(old, {}), protobuf.parse(new, {})
    assert isinstance(protobuf.reader_errors(after, before), list)
    assert protobuf.reader_errors(before, before) == []
    assert protobuf.parse(before.canonical, {}).canonical == before.canonical


def test_a_file_without_syntax_is_proto2_and_protoc_writes_nothing_to_stderr(capfd):
    parsed = protobuf.parse("// no syntax line\nmessage M { optional int32 a = 1; }", {})
    assert parsed.canonical.startswith('syntax = "proto2";')
    with pytest.raises(SchemaError, match="schema:1:"):  # positions still count the user's lines
        protobuf.parse("// no syntax line\nmessage M { optional Nope a = 1; }", {})
    assert capfd.readouterr().err == ""


DESCRIPTOR_SEED = protobuf.parse(
    P2 + "package p; message A { optional int32 a = 1 [default = 3]; repeated string s = 2; map<string, A> m = 3;"
         " oneof o { int32 x = 4; } enum E { Z = 0; } optional E e = 5; } service S { rpc M (A) returns (A); }",
    {}).native.main.SerializeToString()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(DESCRIPTOR_SEED) - 1), st.integers(0, 255)), min_size=1, max_size=4))
def test_corrupted_base64_descriptors_raise_nothing_but_schema_error(changes):
    corrupt = bytearray(DESCRIPTOR_SEED)
    for position, value in changes:
        corrupt[position] = value
    try:
        protobuf.parse(base64.b64encode(bytes(corrupt)).decode(), {})
    except SchemaError:
        pass
