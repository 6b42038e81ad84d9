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
    import numpy as np  # ~0.3 s to import: only once a batch is checked (codec.schema_ids_numpy)

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


def numpy_ids(payload, count: int, keys: bool, values: bool) -> tuple[set | None, set | None] | None:
    """`distinct_ids` by numpy."""
    if count < MIN_RECORDS:
        return None
    payload = bytes(payload)  # record_ends indexes it: bytes index fastest
    ends = record_ends(payload, count)
    if ends is None or ends[-1] > len(payload):
        return None
    from codec.schema_ids_numpy import fields_ids  # numpy costs ~0.3 s to import: only when used
    return fields_ids(payload, ends, keys, values)
