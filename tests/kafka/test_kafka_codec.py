"""codec/kafka without I/O: every advertised (api, version) round-trips, headers, record batches."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from codec.kafka import apis, protocol, records
from codec.kafka.schema import DecodeError, read_uvarint, read_varint, uvarint_bytes, varint_bytes

ALL_VERSIONS = [(a.key, v) for a in apis.ALL for v in range(a.min_version, a.max_version + 1)]


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_varint_roundtrip(n):
    assert read_varint(varint_bytes(n), 0) == (n, len(varint_bytes(n)))


@given(st.integers(min_value=0, max_value=(1 << 32) - 1))
def test_uvarint_roundtrip(n):
    assert read_uvarint(uvarint_bytes(n), 0)[0] == n


@pytest.mark.parametrize("key,version", ALL_VERSIONS)
def test_every_request_version_roundtrips(key, version):
    """A request we encode decodes to the same fields (defaults filled in), header included."""
    decode = protocol.codecs(key, version)[0]
    empty = decode(protocol.request_frame(key, version, 1, {})[4:],
                   protocol.parse_header(protocol.request_frame(key, version, 1, {})[4:]).body_offset)
    frame = protocol.request_frame(key, version, 42, empty, client_id="c1")
    header = protocol.parse_header(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (key, version, 42, "c1")
    assert protocol.decode_request(header, frame[4:]) == empty


def test_flexible_header_and_compact_fields():
    """Metadata v9+ is flexible: request header v2 (tag buffer) and compact strings."""
    frame = protocol.request_frame(3, 9, 5, {"topics": [{"name": "abc"}]})
    assert frame[4 + 10 + len("rocketgate")] == 0  # empty tagged fields after the classic client id
    body = frame[4 + 10 + len("rocketgate") + 1:]
    assert body[:5] == b"\x02\x04abc"  # compact array of 1, compact string "abc"
    header = protocol.parse_header(frame[4:])
    assert protocol.decode_request(header, frame[4:])["topics"][0]["name"] == "abc"


def test_api_versions_response_header_is_v0_even_when_flexible():
    frame = protocol.response_frame(18, 3, 7, {"api_keys": [{"api_key": 0, "min_version": 0, "max_version": 9}]})
    assert frame[4:8] == b"\x00\x00\x00\x07"
    assert frame[8:10] == b"\x00\x00"  # error code right after the correlation id: no tag buffer
    assert protocol.decode_response(18, 3, frame[4:])[1]["api_keys"][0]["max_version"] == 9


def test_truncated_request_raises_decode_error():
    frame = protocol.request_frame(0, 9, 1, {"topic_data": [{"name": "t", "partition_data": [
        {"index": 0, "records": b"x" * 100}]}]})
    header = protocol.parse_header(frame[4:-10])
    with pytest.raises(DecodeError):
        protocol.decode_request(header, frame[4:-10])


@pytest.mark.parametrize("codec", [records.NONE, records.GZIP, records.SNAPPY, records.LZ4, records.ZSTD])
def test_record_batch_roundtrip(codec):
    recs = [(1000, b"k1", b"v1", [("TAGS", b"a"), ("bin", b"\x00\xff"), ("bin", None)]),
            (1005, None, None, [])]
    data = records.build_batch(recs, base_offset=7, base_timestamp=1000, compression=codec)
    (batch,) = records.parse_batches(data)
    assert batch.crc_ok() and batch.record_count == 2 and batch.base_offset == 7 and batch.max_timestamp == 1005
    decoded = records.decode_records(batch.records_bytes(), 2)
    assert [(r.key, r.value, r.headers, r.timestamp_delta) for r in decoded] == [
        (b"k1", b"v1", [("TAGS", b"a"), ("bin", b"\x00\xff"), ("bin", None)], 0), (None, None, [], 5)]


def test_base_offset_patch_keeps_crc_and_corruption_is_detected():
    data = records.build_batch([(1, b"k", b"v", [])])
    patched = records.with_base_offset(data, 123456)
    (b,) = records.parse_batches(patched)
    assert b.base_offset == 123456 and b.crc_ok()
    broken = bytearray(data)
    broken[-1] ^= 0xFF
    assert not records.parse_batches(bytes(broken))[0].crc_ok()


def test_log_append_time_rewrite_recomputes_crc():
    data = records.build_batch([(1, b"k", b"v", [])])
    (b,) = records.parse_batches(records.with_log_append_time(data, 999))
    assert b.crc_ok() and b.max_timestamp == 999 and b.attributes & records.TIMESTAMP_LOG_APPEND


def test_xerial_snappy_framing_is_read():
    import cramjam

    payload = b"hello " * 50
    block = bytes(cramjam.snappy.compress_raw(payload))
    framed = records.XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01" + len(block).to_bytes(4, "big") + block
    assert records.decompress(records.SNAPPY, framed) == payload


def test_torn_batch_is_rejected():
    data = records.build_batch([(1, b"k", b"v", [])])
    with pytest.raises(DecodeError):
        records.parse_batches(data[:-3])


@given(st.sampled_from(ALL_VERSIONS), st.binary(max_size=300))
def test_random_request_bodies_only_raise_decode_errors(key_version, body):
    """Bad input is a DecodeError (the listener closes that connection), never another exception."""
    key, version = key_version
    frame = protocol.request_frame(key, version, 1, {})[4:]
    header = protocol.parse_header(frame)
    try:
        protocol.decode_request(header, frame[:header.body_offset] + body)
    except DecodeError:
        pass


@given(st.binary(max_size=400))
def test_random_record_bytes_only_raise_decode_errors(data):
    try:
        for batch in records.parse_batches(data):
            batch.crc_ok()
            records.decode_records(batch.records_bytes(), batch.record_count)
    except DecodeError:
        pass


@given(st.binary(min_size=61, max_size=400), st.integers(min_value=-5, max_value=50))
def test_random_records_section_only_raises_decode_errors(data, count):
    try:
        records.decode_records(data, count)
    except DecodeError:
        pass


_blob = st.one_of(st.none(), st.binary(max_size=200))


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=10 ** 6), _blob, _blob,
                          st.lists(st.tuples(st.sampled_from(["TAGS", "KEYS", "ü", "x"]) | st.text(max_size=8), _blob),
                                   max_size=3)), min_size=1, max_size=20))
def test_index_scan_agrees_with_full_decode(recs):
    recs = [(1000 + ts, k, v, h) for ts, k, v, h in recs]
    (b,) = records.parse_batches(records.build_batch(recs, base_timestamp=1000))
    payload = b.records_bytes()
    full = records.decode_records(payload, b.record_count)
    assert records.scan_keys_headers(payload, b.record_count) == [(r.key, r.headers) for r in full]
    only = {b"TAGS": "TAGS", "ü".encode(): "ü"}
    kept = [(r.key, [(k, v) for k, v in r.headers if k in ("TAGS", "ü")]) for r in full]
    assert records.scan_keys_headers(payload, b.record_count, only) == kept


@given(st.binary(min_size=0, max_size=400), st.integers(min_value=-5, max_value=50))
def test_random_records_section_only_raises_decode_errors_in_the_index_scan(data, count):
    try:
        records.scan_keys_headers(data, count, {b"KEYS": "KEYS"})
    except DecodeError:
        pass
