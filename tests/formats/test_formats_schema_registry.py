"""Schema registry layouts: the construct definitions (codec.formats.schema_registry) and the hot path
(codec.schema_registry) agree, both directions, on the frame, the Protobuf message indexes and the
`_schemas` keys and values (field order included), and refuse the same bytes."""
from __future__ import annotations

import pytest
from construct import ConstructError
from hypothesis import given, settings
from hypothesis import strategies as st

from codec import schema_registry as wire
from codec.formats.schema_registry import (MAX_MESSAGE_INDEXES, SCHEMAS_KEYS, SCHEMAS_VALUES, ProtobufMessageIndexes,
                                           ProtobufPayload, SchemaRegistryFrame, SchemasKey, SchemasValue)
from format_strategies import blobs, i32, text, u31


def _or_none(parse, refusal):
    """What `parse()` returns, None when it refuses the bytes with `refusal`."""
    try:
        return parse()
    except refusal:
        return None


message_indexes = st.lists(u31, min_size=1, max_size=MAX_MESSAGE_INDEXES)


@settings(deadline=None)
@given(schema_id=i32, payload=blobs)
def test_frame_both_directions(schema_id, payload):
    raw = wire.frame(schema_id, payload)
    p = SchemaRegistryFrame.parse(raw)
    assert (p.magic, p.schema_id, p.payload) == (0, schema_id, payload)
    built = SchemaRegistryFrame.build(dict(schema_id=schema_id, payload=payload))
    assert built == raw and wire.unframe(built) == (schema_id, payload)


@settings(deadline=None)
@given(raw=st.binary(max_size=8))
def test_frame_refusals_agree(raw):
    p = _or_none(lambda: SchemaRegistryFrame.parse(raw), ConstructError)
    assert _or_none(lambda: wire.unframe(raw), wire.FrameError) == (None if p is None else (p.schema_id, p.payload))


@settings(deadline=None)
@given(schema_id=i32, indexes=message_indexes, message=blobs)
def test_protobuf_frame_both_directions(schema_id, indexes, message):
    raw = wire.frame(schema_id, message, indexes)
    payload = SchemaRegistryFrame.parse(raw).payload
    p = ProtobufPayload.parse(payload)
    assert (p.message_indexes, p.message) == (indexes, message)
    built = ProtobufPayload.build(dict(message_indexes=indexes, message=message))
    assert built == payload and wire.decode_message_indexes(built) == (indexes, message)
    assert ProtobufMessageIndexes.build(indexes) == wire.encode_message_indexes(indexes)


@pytest.mark.parametrize("count", [MAX_MESSAGE_INDEXES, MAX_MESSAGE_INDEXES + 1])
def test_message_index_count_bound_agrees(count):
    raw = wire.varint_bytes(count) + bytes(count) + b"msg"
    hot = _or_none(lambda: wire.decode_message_indexes(raw), wire.FrameError)
    defined = _or_none(lambda: ProtobufPayload.parse(raw), ConstructError)
    assert (hot is not None) == (defined is not None) == (count <= MAX_MESSAGE_INDEXES)


def test_first_message_is_one_zero_byte_both_ways():
    assert ProtobufMessageIndexes.build([0]) == wire.encode_message_indexes([0]) == b"\x00"
    assert ProtobufMessageIndexes.parse(b"\x00") == wire.decode_message_indexes(b"\x00")[0] == [0]


@settings(deadline=None)
@given(raw=st.binary(max_size=9))  # at most 9 bytes: no varint the hot path refuses as too long (> 10 bytes)
def test_message_index_refusals_agree(raw):
    p = _or_none(lambda: ProtobufPayload.parse(raw), ConstructError)
    hot = _or_none(lambda: wire.decode_message_indexes(raw), wire.FrameError)
    assert hot == (None if p is None else (p.message_indexes, p.message))


def _key_of(keytype, subject, version):
    """A Key the hot path can write: the fields SCHEMAS_KEYS gives the keytype."""
    fields, _magic = SCHEMAS_KEYS[keytype]
    return wire.Key(keytype, subject if "subject" in fields else None, version if "version" in fields else None)


keys = st.builds(_key_of, st.sampled_from(sorted(SCHEMAS_KEYS)), text, i32)
global_keys = st.builds(wire.Key, st.sampled_from(["CONFIG", "MODE"]))


@settings(deadline=None)
@given(key=keys | global_keys)
def test_schemas_key_both_directions(key):
    raw = wire.encode_key(key)
    fields, magic = SCHEMAS_KEYS[key.keytype]
    p = SchemasKey.parse(raw)
    assert list(p) == ["keytype", *fields, "magic"] and p["magic"] == magic
    assert (p["keytype"], p.get("subject"), p.get("version")) == (key.keytype, key.subject, key.version)
    built = SchemasKey.build(dict(keytype=key.keytype, subject=key.subject, version=key.version))
    assert built == raw and wire.decode_key(built) == key


references = st.lists(st.tuples(text, text, i32), max_size=3).map(tuple)
schema_values = st.builds(wire.SchemaValue, text, i32, i32, text, st.sampled_from(["AVRO", "PROTOBUF", "JSON"]),
                          references, st.booleans())


@settings(deadline=None)
@given(v=schema_values)
def test_schema_value_both_directions(v):
    raw = wire.encode_schema_value(v)
    p = SchemasValue.parse(raw)
    present = [f.rstrip("?") for f in SCHEMAS_VALUES["SCHEMA"] if not f.endswith("?") or f.rstrip("?") in p]
    assert list(p) == present
    fields = dict(subject=v.subject, version=v.version, id=v.id, schema=v.schema, deleted=v.deleted,
                  schemaType=None if v.schema_type == "AVRO" else v.schema_type,
                  references=[dict(name=n, subject=s, version=ver) for n, s, ver in v.references] or None)
    assert {k: p.get(k) for k in fields} == fields
    built = SchemasValue.build(fields, keytype="SCHEMA")
    assert built == raw and wire.decode_schema_value(wire.decode_value(built)) == v


@settings(deadline=None)
@given(word=text, subject=text, version=i32)
def test_setting_and_subject_values_both_directions(word, subject, version):
    written = {
        "CONFIG": (wire.encode_config_value(word), {"compatibilityLevel": word}),
        "MODE": (wire.encode_mode_value(word), {"mode": word}),
        "DELETE_SUBJECT": (wire.encode_delete_subject_value(subject, version),
                           {"subject": subject, "version": version}),
        "CLEAR_SUBJECT": (wire.encode_clear_subject_value(subject), {"subject": subject}),
    }
    assert sorted(written) == sorted(k for k in SCHEMAS_VALUES if k != "SCHEMA")
    for keytype, (raw, value) in written.items():
        assert SchemasValue.parse(raw) == value and list(SchemasValue.parse(raw)) == list(SCHEMAS_VALUES[keytype])
        built = SchemasValue.build(value, keytype=keytype)
        assert built == raw and wire.decode_value(built) == value


@pytest.mark.parametrize("raw", [b"", b"null", b"NULL"])
def test_tombstone_spellings_agree(raw):
    assert SchemasValue.parse(raw) is None and wire.decode_value(raw) is None
