"""The numpy reader of codec.schema_ids (sans-I/O), in its own module so that importing numpy
(~0.3 s) is paid only when a batch is scanned this way, not by every gateway start."""
from __future__ import annotations

import numpy as np


def _at(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The bytes at positions `at`; one past the section reads as its last byte. Such a read only
    comes from a field that does not end inside its record, which the bounds check refuses."""
    return a.take(at, mode="clip")


def _varint_lengths(a: np.ndarray, at: np.ndarray, most: int, bad: np.ndarray) -> np.ndarray:
    """The byte lengths of the varints at positions `at`; one longer than `most` bytes marks `bad`."""
    more = _at(a, at) >= 0x80
    length = 1 + more
    for k in range(1, most):
        if not np.count_nonzero(more):
            return length
        more &= _at(a, at + k) >= 0x80
        length += more
    bad |= more
    return length


def _varints(a: np.ndarray, at: np.ndarray, most: int, bad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(zigzag-decoded values, byte lengths) of the varints at positions `at`; one longer than `most`
    bytes marks `bad`."""
    b = _at(a, at).astype(np.int64)
    more = b >= 0x80
    value = b & 0x7F
    length = 1 + more
    for k in range(1, most):
        if not np.count_nonzero(more):
            break
        b = _at(a, at + k).astype(np.int64)
        value |= np.where(more, (b & 0x7F) << (7 * k), 0)
        more &= b >= 0x80
        length += more
    bad |= more
    return (value >> 1) ^ -(value & 1), length


_ID_BYTES = np.arange(1, 5)


def _ids(a: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> set[int] | None:
    """The distinct schema ids of the non-null framed fields at `starts`; None when one is not framed."""
    if np.count_nonzero(lengths < 0):  # nulls pass unframed
        present = lengths >= 0
        starts, lengths = starts[present], lengths[present]
        if len(starts) == 0:
            return set()
    if np.count_nonzero(lengths < 5) or np.count_nonzero(_at(a, starts)):
        return None
    ids = a[starts[:, None] + _ID_BYTES].view(">i4").ravel()  # magic byte 0, then a big-endian id
    first = int(ids[0])
    return {first} if not np.count_nonzero(ids != first) else set(ids.tolist())


def fields_ids(payload: bytes, ends: list[int], keys: bool, values: bool) -> tuple[set | None, set | None] | None:
    """`distinct_ids` of the records ending at `ends` (codec.schema_ids.record_ends, all inside `payload`)."""
    a = np.frombuffer(payload, dtype=np.uint8)
    end = np.array(ends, dtype=np.int64)
    start = np.empty_like(end)
    start[0] = 0
    start[1:] = end[:-1]
    first = _at(a, start)
    bad = (first & 1).astype(bool)  # a negative record length (its sign is the first byte's low bit)
    two = first >= 0x80
    pos = start + 2 + two + (two & (_at(a, start + 1) >= 0x80))  # past the length and the attributes byte
    pos += _varint_lengths(a, pos, 5, bad)  # timestampDelta
    pos += _varint_lengths(a, pos, 5, bad)  # offsetDelta
    key_len, length = _varints(a, pos, 3, bad)  # negative: a null key
    key_start = pos + length
    # every field lies inside its record: the value (null or not) ends by the record's end, so the
    # fields before it do too; a key past the end is clamped there (a read in bounds, then refused)
    pos = np.minimum(key_start + np.maximum(key_len, 0), end)
    value_len, length = _varints(a, pos, 3, bad)
    value_start = pos + length
    bad |= value_start + np.maximum(value_len, 0) > end
    if np.count_nonzero(bad):
        return None
    key_ids = _ids(a, key_start, key_len) if keys else None
    value_ids = _ids(a, value_start, value_len) if values else None
    if (keys and key_ids is None) or (values and value_ids is None):
        return None
    return key_ids, value_ids
