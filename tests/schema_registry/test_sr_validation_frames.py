"""codec.schema_frames (the produce path's key/value scan for schema validation) against
codec.kafka.records.decode_records on random batches, and on every truncation of one: the same
keys and values (cut to 5-byte heads when asked), DecodeError and nothing else on bad input."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from codec import schema_frames
from codec.kafka import records
from codec.kafka.schema import DecodeError

# short blobs, and long ones (three-byte length varints) made cheaply
blob = st.one_of(st.none(), st.binary(max_size=300), st.integers(8000, 9000).map(lambda n: b"\x00" * n))
record = st.tuples(st.integers(0, 10**7), blob, blob, st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)),
                                                                  max_size=2))


def _cut(b, head):
    return None if b is None or head is None else b[:head]


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=8), st.sampled_from([None, 5]))
def test_columns_match_decode_records(rows, head):
    batch = records.parse_batches(records.build_batch([(ts, k, v, h) for ts, k, v, h in rows], base_timestamp=0))[0]
    section = batch.records_bytes()
    decoded = records.decode_records(section, batch.record_count)
    keys, values = schema_frames.columns(section, batch.record_count, True, True, head)
    assert keys == [r.key if head is None else _cut(r.key, head) for r in decoded]
    assert values == [r.value if head is None else _cut(r.value, head) for r in decoded]
    assert schema_frames.columns(section, batch.record_count, False, True, head) == (None, values)


def test_every_truncation_is_a_decode_error():
    batch = records.parse_batches(records.build_batch(
        [(1, None, b"\x00\x00\x00\x00\x01x", []), (70000, b"k" * 200, b"v" * 300, [("h", b"1")])]))[0]
    section = batch.records_bytes()
    for cut in range(len(section)):
        try:
            schema_frames.columns(section[:cut], 2, True, True)
        except DecodeError:
            continue
        raise AssertionError(f"a section cut at {cut} of {len(section)} bytes was read")


def _validation(text: str):
    """A SchemaValidation over a registry state holding `text` as id 1 under t-value (no store)."""
    import types
    from codec import schema_registry as wire
    from semantics.schema_formats import module
    from semantics.schema_registry import RegistryState
    from semantics.schema_validation import SchemaValidation
    state = RegistryState()
    state.apply(wire.encode_key(wire.Key("SCHEMA", "t-value", 1)),
                wire.encode_schema_value(wire.SchemaValue("t-value", 1, 1, text)))
    parsed = module("AVRO").parse(text, {})
    return SchemaValidation(types.SimpleNamespace(state=state, log=types.SimpleNamespace(applied=1),
                                                  fresh=lambda: state, parsed=lambda _schema: parsed))


AVRO = '{"type":"record","name":"R","fields":[{"name":"n","type":"long"},{"name":"s","type":"string"}]}'


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40),
                          st.binary(max_size=40).map(lambda b: b"\x00\x00\x00\x00\x01" + b)), min_size=1, max_size=6))
def test_hostile_values_are_refused_or_accepted_never_raised(values):
    from semantics.schema_validation import rule_of
    validation = _validation(AVRO)
    for level in ("true", "full"):
        rule = rule_of({"confluent.value.schema.validation": level})
        heads = values if level == "full" else [None if v is None else v[:5] for v in values]
        refused = dict(validation.refusals("kafka", "t", rule, None, heads))
        for i, v in enumerate(values):
            framed = v is not None and v[:5] == b"\x00\x00\x00\x00\x01"
            if v is None or (framed and level == "true"):
                assert i not in refused
            elif not framed:
                assert "not framed" in refused[i] or "not registered" in refused[i]
