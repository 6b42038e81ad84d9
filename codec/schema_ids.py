"""The distinct schema ids of a Kafka records section's keys and values, found without a Python loop
over the fields of each record (sans-I/O): the id level of the broker's schema validation only needs
to know which ids a batch uses when every record is framed, the usual case.

Two readers with one contract: codec/native/schema_ids.c (plain C through ctypes, built by `make
setup`, a few ns per record) when its library is there, else numpy (one short loop follows the record
lengths, numpy reads every record's fields at once from those starts). The answer is None whenever
anything is unusual (a varint longer than these read, a field past its record, a key or value
shorter than 5 bytes or not starting with magic byte 0, many distinct ids): the caller then takes
`schema_frames.columns`, whose per-record heads say exactly which records are refused and why. So
when an answer is given, it is the set of ids `columns` would find, never a different verdict. Small
batches go to `columns` too (the fixed cost of a call outweighs its loop there)."""
from __future__ import annotations

import ctypes
import os

import numpy as np

MIN_RECORDS = 48  # below this the per-record loop of schema_frames is cheaper than numpy's fixed cost
NATIVE_MIN_RECORDS = 8  # the same for the native reader (a ctypes call costs a few µs)
MOST_IDS = 16  # distinct ids per side the native reader collects (more: the per-record scan)
_LIBRARY = os.path.join(os.path.dirname(__file__), "native", "libschemaids.so")


def _load_native():
    """The native reader's function, None when its library is not built (or does not load)."""
    try:
        lib = ctypes.CDLL(_LIBRARY)
    except OSError:
        return None
    fn = lib.schema_ids
    out = ctypes.POINTER(ctypes.c_int32)
    count = ctypes.POINTER(ctypes.c_int)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                   out, count, out, count, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_native = _load_native()


def native_ids(payload, count: int, keys: bool, values: bool) -> tuple[set | None, set | None] | None:
    """`distinct_ids` by the native reader (which must be loaded), on the payload's own buffer."""
    if count < NATIVE_MIN_RECORDS:
        return None
    section = np.frombuffer(payload, dtype=np.uint8)  # its address, without a copy (a memoryview too)
    key_ids, value_ids = (ctypes.c_int32 * MOST_IDS)(), (ctypes.c_int32 * MOST_IDS)()
    key_count, value_count = ctypes.c_int(), ctypes.c_int()
    if _native(section.ctypes.data, len(section), count, keys, values, key_ids, key_count, value_ids, value_count,
               MOST_IDS):
        return None
    return (set(key_ids[:key_count.value]) if keys else None,
            set(value_ids[:value_count.value]) if values else None)


def distinct_ids(payload, count: int, keys: bool, values: bool) -> tuple[set | None, set | None] | None:
    """(key ids, value ids) of the `count` records of the records section `payload` (bytes or a
    memoryview; None for a side not asked for), or None when the batch is small or not plainly framed
    (see the module's docstring)."""
    if _native is not None:
        return native_ids(payload, count, keys, values)
    return numpy_ids(payload, count, keys, values)


def record_ends(buf: bytes, count: int) -> list[int] | None:
    """The end of each record, from its length varint read as unsigned (the caller refuses negative
    ones), None when one takes four bytes or more or the section ends first."""
    ends = []
    append = ends.append
    pos = 0
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                pos += 1 + (b >> 1)
            else:
                b2 = buf[pos + 1]
                if b2 < 0x80:  # 2 + (((b & 0x7F) | (b2 << 7)) >> 1), with b >= 0x80
                    pos += (b >> 1) + (b2 << 6) - 62
                else:
                    b3 = buf[pos + 2]
                    if b3 >= 0x80:
                        return None
                    pos += 3 + (((b & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14)) >> 1)
            append(pos)
    except IndexError:
        return None
    return ends


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


def numpy_ids(payload, count: int, keys: bool, values: bool) -> tuple[set | None, set | None] | None:
    """`distinct_ids` by numpy."""
    if count < MIN_RECORDS:
        return None
    payload = bytes(payload)  # record_ends indexes it: bytes index fastest
    n = len(payload)
    ends = record_ends(payload, count)
    if ends is None or ends[-1] > n:
        return None
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
