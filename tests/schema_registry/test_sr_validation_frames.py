"""codec.schema_frames (the produce path's key/value scan for schema validation) against
codec.kafka.records.decode_records on random batches, and on every truncation of one: the same
keys and values (cut to 5-byte heads when asked), DecodeError and nothing else on bad input."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from codec import schema_frames
from codec.kafka import records
from codec.kafka.schema import DecodeError

blob = st.one_of(st.none(), st.binary(max_size=300), st.binary(min_size=8000, max_size=9000))
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
