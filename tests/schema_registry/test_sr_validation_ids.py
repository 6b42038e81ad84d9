"""codec.schema_ids (the id level's scan without a per-record field loop), both readers (numpy, and
the C one of codec/native when `make setup` built it), against codec.schema_frames.columns on random
and damaged batches: whenever one answers, its ids are exactly those of the heads `columns` returns
and every head is framed; it answers for the batches clients send; it never raises. And the produce
path's `schema_record_errors` on batches large enough to take it: the same record errors as the
per-record path."""
from __future__ import annotations

import random
import types

import pytest
from hypothesis import given, settings, strategies as st

from codec import schema_frames, schema_ids
from codec.kafka import records
from codec.kafka.schema import DecodeError
from codec.schema_registry import frame
from test_sr_validation_frames import AVRO, _validation

N = schema_ids.MIN_RECORDS
NATIVE = pytest.param("native", marks=pytest.mark.skipif(schema_ids._native is None,
                                                          reason="codec/native not built (make native)"))
READERS = pytest.mark.parametrize("reader", ["numpy", NATIVE])


def _reader(name: str):
    return schema_ids.numpy_ids if name == "numpy" else schema_ids.native_ids
framed = st.tuples(st.sampled_from([1, 2, -7, 2**31 - 1]), st.binary(max_size=60)).map(lambda t: frame(*t))
field = st.one_of(st.none(), framed, st.binary(max_size=12), st.just(b"\x00" * 9000))
headers = st.lists(st.tuples(st.text(max_size=4), st.binary(max_size=4)), max_size=2)
row = st.tuples(st.integers(0, 10**9), field, field, headers)
clean_row = st.tuples(st.integers(0, 10**9), st.one_of(st.none(), framed), st.one_of(st.none(), framed), headers)


def _expected(section: bytes, count: int) -> tuple[set, set] | None:
    """The ids of the heads of each side per schema_frames.columns; None when a head is not framed
    (or the section does not read), where distinct_ids must not answer."""
    try:
        keys, values = schema_frames.columns(section, count, True, True)
    except DecodeError:
        return None
    out = []
    for column in (keys, values):
        heads = [h for h in column if h is not None]
        if any(len(h) < 5 or h[0] != 0 for h in heads):
            out.append(None)
        else:
            out.append({int.from_bytes(h[1:5], "big", signed=True) for h in heads})
    return tuple(out)


def _check(reader, section: bytes, count: int) -> None:
    expected = _expected(section, count)
    for keys, values in ((True, True), (False, True), (True, False)):
        got = _reader(reader)(section, count, keys, values)
        if got is None:
            continue
        assert expected is not None, "answered for a section that columns cannot read"
        if keys:
            assert expected[0] is not None and got[0] == expected[0]
        if values:
            assert expected[1] is not None and got[1] == expected[1]


def _section(rows) -> tuple[bytes, int]:
    batch = records.parse_batches(records.build_batch(list(rows), base_timestamp=0))[0]
    return batch.records_bytes(), batch.record_count


@READERS
@settings(max_examples=80, deadline=None)
@given(st.lists(clean_row, min_size=N, max_size=N + 20), st.lists(st.tuples(st.integers(0, N), row), max_size=2))
def test_answers_agree_with_columns(reader, rows, odd):
    for at, r in odd:  # a few records of any kind among framed ones
        rows.insert(at, r)
    section, count = _section(rows)
    _check(reader, section, count)
    if not odd:
        assert _reader(reader)(section, count, True, True) is not None


@READERS
@settings(max_examples=60, deadline=None)
@given(st.lists(clean_row, min_size=N, max_size=N + 5), st.data())
def test_damaged_sections_are_never_misread(reader, rows, data):
    section, count = _section(rows)
    cut = data.draw(st.integers(0, len(section)))
    _check(reader, section[:cut], count)
    damaged = bytearray(section)
    for _ in range(data.draw(st.integers(1, 4))):
        damaged[data.draw(st.integers(0, len(section) - 1))] = data.draw(st.integers(0, 255))
    _check(reader, bytes(damaged), count)
    _check(reader, section, data.draw(st.integers(count + 1, count + 3)))  # a count the section does not hold


@READERS
def test_answers_for_what_clients_send(reader):
    read = _reader(reader)
    values = [frame(3, b"\x02a" * random.randint(0, 300)) for _ in range(200)]
    section, count = _section([(i, None, v, []) for i, v in enumerate(values)])
    assert read(section, count, False, True) == (None, {3})
    assert read(memoryview(b"x" + section)[1:], count, False, True) == (None, {3})  # a view, read in place
    keyed = [(i * 1000, frame(9, b"k%d" % i), frame(4 + i % 2, b"\x02"), [("h", b"v")]) for i in range(N)]
    assert read(*_section(keyed), True, True) == ({9}, {4, 5})
    small = schema_ids.MIN_RECORDS if reader == "numpy" else schema_ids.NATIVE_MIN_RECORDS
    assert read(*_section(keyed[:small]), True, True) is not None
    assert read(*_section(keyed[:small - 1]), True, True) is None  # small: columns does it
    many = [(0, None, frame(i, b"\x02"), []) for i in range(N)]
    assert read(*_section(many), False, True) in (None, (None, set(range(N))))  # may leave many ids to columns


def _record_errors(values: list, compression: int = records.NONE) -> list[dict]:
    from gateway.kafka.record_errors import schema_record_errors
    from semantics.schema_validation import rule_of
    validation = _validation(AVRO)
    app = types.SimpleNamespace(schema_validation=validation)
    data = records.build_batch([(0, None, v, []) for v in values], compression=compression)
    batches = records.parse_batches(memoryview(b"\x00" + data)[1:])  # as a request holds them
    coro = schema_record_errors(app, rule_of({"confluent.value.schema.validation": "true"}), batches, "t")
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("suspended: no leader to ask here")


@pytest.mark.parametrize("compression", [records.NONE, records.GZIP])
def test_large_batches_get_the_same_record_errors(compression):
    good = frame(1, b"\x02\x02a")
    assert _record_errors([good] * 100, compression) == []
    values = [good] * 100
    values[17], values[70], values[99] = b"plain", frame(2, b"x"), None
    errors = _record_errors(values, compression)
    assert [e["batch_index"] for e in errors] == [17, 70]
    assert "not framed with a schema id" in errors[0]["batch_index_error_message"]
    assert "schema id 2 is not registered" in errors[1]["batch_index_error_message"]


def _zz(v: int) -> bytes:
    out = bytearray()
    records.write_varint(out, v)
    return bytes(out)


def _record(value: bytes | None, key: bytes | None = None, *, length: bytes | None = None, value_len: bytes | None = None,
            ts: bytes = b"\x00", off: bytes = b"\x00") -> bytes:
    """One record of a records section, with any of its varints given as raw bytes."""
    def sized(b):
        return _zz(-1) if b is None else _zz(len(b)) + b
    value_part = sized(value) if value_len is None else value_len + (value or b"")
    body = b"\x00" + ts + off + sized(key) + value_part + b"\x00"
    return (_zz(len(body)) if length is None else length) + body


@READERS
def test_each_odd_record_sends_the_batch_to_columns(reader):
    read = _reader(reader)
    good = _record(frame(1, b"\x02\x02ab"))
    odd = {
        "value past its record": _record(frame(1, b"abc"), value_len=_zz(40)),
        "negative record length": bytes([good[0] | 1]) + good[1:],  # -16, read unsigned as 15
        "record of one byte": _zz(1) + b"\x00",
        "key past its record": _zz(5) + b"\x00\x00\x00" + _zz(50) + b"k",
        "four-byte value length": _record(frame(1, b"a"), value_len=b"\x8c\x80\x80\x00"),
        "six-byte timestampDelta": _record(frame(1, b"a"), ts=b"\x80" * 5 + b"\x00"),
        "short value": _record(b"\x00\x00\x01"),
        "other magic byte": _record(b"\x01" + frame(1, b"a")[1:]),
        "framed key among framed values": _record(frame(1, b"a"), key=b"plain key"),
    }
    assert schema_ids.record_ends(b"\x9e\x80\x80\x00" + good[1:], 1) is None  # a four-byte record length
    assert schema_ids.record_ends(b"\x9e\x80\x00" + good[1:] + bytes(40), 1) == [18]
    for name, record in odd.items():
        section = good * 30 + record + good * 30
        assert read(section, 61, True, True) is None, name
        _check(reader, section, 61)
    assert read(good * 61, 61, True, True) == (set(), {1})
    nulls = good * 30 + _record(None) + _record(frame(1, b"a"), value_len=_zz(-2)) + good * 30
    assert read(nulls, 62, False, True) == (None, {1})  # a negative length is a null value
