"""codec/schema_registry.py: the magic-byte frame, Protobuf message indexes and `_schemas` records in
Confluent's JSON (the key formats Karapace and Confluent write)."""
from __future__ import annotations

import json

import pytest

from codec import schema_registry as wire


def test_frame_round_trip_and_refusals():
    framed = wire.frame(258, b"payload")
    assert framed == b"\x00\x00\x00\x01\x02payload"
    assert wire.unframe(framed) == (258, b"payload")
    with pytest.raises(wire.FrameError):
        wire.unframe(b"\x00\x00\x01")  # truncated header
    with pytest.raises(wire.FrameError):
        wire.unframe(b"\x01\x00\x00\x00\x01x")  # another magic byte


@pytest.mark.parametrize("indexes", [[0], [1], [0, 2], [5, 0, 300]])
def test_protobuf_message_indexes(indexes):
    framed = wire.frame(7, b"msg", indexes)
    schema_id, payload = wire.unframe(framed)
    assert schema_id == 7 and wire.decode_message_indexes(payload) == (indexes, b"msg")
    if indexes == [0]:
        assert payload == b"\x00msg"  # Confluent's shortcut for the first message


def test_message_indexes_refuse_truncated_and_negative():
    with pytest.raises(wire.FrameError):
        wire.decode_message_indexes(b"\x04\x80")  # count 2, then a varint cut short
    with pytest.raises(wire.FrameError):
        wire.decode_message_indexes(b"\x02\x01")  # count 1, index -1


def test_keys_are_confluents_compact_json():
    assert wire.encode_key(wire.Key("SCHEMA", "t-value", 3)) == \
        b'{"keytype":"SCHEMA","subject":"t-value","version":3,"magic":1}'
    assert wire.encode_key(wire.Key("CONFIG")) == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert wire.encode_key(wire.Key("NOOP")) == b'{"keytype":"NOOP","magic":0}'
    assert wire.encode_key(wire.Key("DELETE_SUBJECT", "s")) == b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'
    # Karapace's own key order decodes the same
    assert wire.decode_key(b'{"subject":"s","version":1,"magic":1,"keytype":"SCHEMA"}') == wire.Key("SCHEMA", "s", 1)


@pytest.mark.parametrize("raw", [None, b"", b"{", b"[]", b'{"keytype":"OTHER"}', b'{"keytype":"SCHEMA","subject":"s"}',
                                 b'{"keytype":"SCHEMA","subject":1,"version":1}', b'{"keytype":"DELETE_SUBJECT"}'])
def test_bad_keys_refused(raw):
    with pytest.raises(wire.RecordError):
        wire.decode_key(raw)


def test_schema_value_round_trip():
    v = wire.SchemaValue("s", 2, 9, '"string"', "PROTOBUF", (("a.proto", "a", 1),), False)
    obj = json.loads(wire.encode_schema_value(v))
    assert obj == {"subject": "s", "version": 2, "id": 9, "schemaType": "PROTOBUF", "schema": '"string"',
                   "deleted": False, "references": [{"name": "a.proto", "subject": "a", "version": 1}]}
    assert wire.decode_schema_value(obj) == v
    assert "schemaType" not in json.loads(wire.encode_schema_value(wire.SchemaValue("s", 1, 1, '"int"')))
    assert wire.decode_value(None) is None and wire.decode_value(b"null") is None
