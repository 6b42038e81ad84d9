"""What Produce refuses before storing (Batch.problem) and what readers refuse to serve
(stored_batch_problem), with the Kafka error each maps to."""
from __future__ import annotations

import struct

from codec.kafka import records
from gateway.kafka import errors
import store


def batch(**kw) -> bytes:
    return records.build_batch([(1, None, b"v", []), (2, b"k", b"w", [])], base_timestamp=1, **kw)


def parsed(data: bytes) -> records.Batch:
    return records.parse_batches(data)[0]


def with_attributes(data: bytes, attrs: int) -> bytes:
    tail = bytearray(data[records.CRC_START:])
    struct.pack_into(">h", tail, 0, attrs)
    return data[:17] + struct.pack(">I", records.crc32c(tail)) + bytes(tail)


def test_a_sound_batch_has_no_problem():
    assert parsed(batch()).problem() is None
    assert records.stored_batch_problem(batch(), 0, len(batch())) is None


def test_produce_refusals():
    good = batch()
    flipped = bytearray(good)
    flipped[-1] ^= 1
    assert parsed(bytes(flipped)).problem() == ("corrupt", "CRC mismatch")
    assert parsed(with_attributes(good, records.CONTROL)).problem()[0] == "invalid"
    assert parsed(with_attributes(good, 6)).problem() == ("corrupt", "unknown compression codec 6")
    wrong_count = bytearray(good)
    struct.pack_into(">i", wrong_count, records.RECORD_COUNT_AT, 5)
    assert parsed(bytes(wrong_count)).problem() == ("invalid", "bad record count")


def test_stored_body_that_is_not_a_batch():
    assert "cannot hold" in records.stored_batch_problem(b"not a batch", 0, 11)
    good = batch()
    assert "length" in records.stored_batch_problem(good + b"xx", 0, len(good) + 2)
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    assert "magic" in records.stored_batch_problem(bytes(bad_magic), 0, len(good))


def test_store_errors_map_to_kafka_codes():
    assert errors.for_store_error(store.StoreFull("disk full")) == errors.KAFKA_STORAGE_ERROR
    assert errors.for_store_error(store.MessageTooLarge("big")) == errors.MESSAGE_TOO_LARGE
    assert errors.for_store_error(store.EntryTooLarge("a batch > a CommitLog file")) == errors.RECORD_LIST_TOO_LARGE
    failed = store.StoreError("CommitLog write failed: EIO")
    failed.__cause__ = OSError(5, "EIO")
    assert errors.for_store_error(failed) == errors.KAFKA_STORAGE_ERROR
    assert errors.for_store_error(store.StoreError("cannot store message: bad")) == errors.INVALID_RECORD
