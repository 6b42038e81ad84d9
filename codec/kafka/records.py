"""RecordBatch (magic 2): header parsing, CRC-32C, the four compression codecs, records.

The gateway stores producer batches verbatim, so the hot path only needs `parse_batches` (header
fields + CRC check) and, when a batch may carry keys or TAGS/KEYS headers, `scan_records`.
"""
from __future__ import annotations

import dataclasses
import functools
import struct

import cramjam
import crc32c as _crc32c

from codec.kafka.schema import DecodeError, read_varint, write_varint

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = BATCH_HEADER.size  # 61
CRC_START = 21  # the CRC covers attributes .. end
LENGTH_OVERHEAD = 12  # baseOffset + batchLength are not counted in batchLength
I64 = struct.Struct(">q")
# Named positions in a RecordBatch header
BASE_OFFSET_AT = 0
BATCH_LENGTH_AT = 8
LEADER_EPOCH_AT = 12  # partitionLeaderEpoch: before the CRC'd part, as the base offset
CRC_AT = 17
ATTRS_AT = 21
LAST_OFFSET_DELTA_AT = 23
MAX_TS_AT = 35
PRODUCER_ID_AT = 43
RECORD_COUNT_AT = 57
PRODUCER_FIELDS = struct.Struct(">qhii")  # at PRODUCER_ID_AT: producerId, producerEpoch, baseSequence, recordCount

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
COMPRESSION_MASK = 0x07
TIMESTAMP_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20

XERIAL_MAGIC = b"\x82SNAPPY\x00"


def crc32c(data) -> int:
    return _crc32c.crc32c(data)


@dataclasses.dataclass
class Batch:
    """One RecordBatch inside a produce request: its header fields and its exact bytes (`raw`: a view
    into the request when parsed from one; `data` copies it out once, when it is to be stored, so a
    batch refused at the door is never copied: a 99 MiB frame stays about 1x in memory)."""

    raw: bytes | memoryview
    base_offset: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @functools.cached_property
    def data(self) -> bytes:
        return bytes(self.raw)

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    def crc_ok(self) -> bool:
        return crc32c(memoryview(self.raw)[CRC_START:]) == self.crc

    def problem(self) -> tuple[str, str] | None:
        """What a broker refuses in a produced batch, checked before it is stored: ("invalid", why)
        for INVALID_RECORD (record count vs. lastOffsetDelta, a control batch from a client),
        ("corrupt", why) for CORRUPT_MESSAGE (unknown compression codec, CRC mismatch); None if fine."""
        if self.record_count < 1 or self.last_offset_delta != self.record_count - 1:
            return "invalid", "bad record count"
        if self.attributes & CONTROL:
            return "invalid", "control batches are written by the broker, not produced"
        if self.compression > ZSTD:
            return "corrupt", f"unknown compression codec {self.compression}"
        if not self.crc_ok():
            return "corrupt", "CRC mismatch"
        return None

    def records_bytes(self) -> bytes:
        """The (decompressed) records section. A compressed one is decompressed once: the produce
        path's checks and its index scan read it in turn."""
        if self.compression == NONE:
            return bytes(memoryview(self.raw)[HEADER_SIZE:])
        return self._decompressed

    @functools.cached_property
    def _decompressed(self) -> bytes:
        return decompress(self.compression, memoryview(self.raw)[HEADER_SIZE:])


def parse_batches(data) -> list[Batch]:
    """Split a produce `records` field into batches; DecodeError on a torn or non-v2 batch."""
    batches = []
    pos = 0
    end = len(data)
    while pos < end:
        if end - pos < HEADER_SIZE:
            raise DecodeError("truncated record batch header")
        fields = BATCH_HEADER.unpack_from(data, pos)
        size = fields[1] + LENGTH_OVERHEAD
        if fields[3] != 2:
            raise DecodeError(f"unsupported record batch magic {fields[3]}")
        if size < HEADER_SIZE or pos + size > end:
            raise DecodeError("record batch length out of range")
        batches.append(Batch(data[pos:pos + size], *fields[:1], *fields[2:]))
        pos += size
    return batches


def stored_batch_problem(buf, at: int, length: int) -> str | None:
    """Why the `length` bytes at `at` (a stored inner-batch entry's body; `buf` holds at least its
    header) are not one servable RecordBatch, None if its header is sound (no CRC): a poison or
    damaged entry is skipped by readers instead of being served or failing the request."""
    if length < HEADER_SIZE or at + HEADER_SIZE > len(buf):
        return f"body of {length} bytes cannot hold a record batch"
    fields = BATCH_HEADER.unpack_from(buf, at)
    if fields[3] != 2:
        return f"record batch magic {fields[3]}"
    if fields[1] + LENGTH_OVERHEAD != length:
        return f"record batch length {fields[1]} does not match the body ({length} bytes)"
    count = fields[12]
    if count < 0 or fields[6] < count - 1:  # fewer records than offsets: a compacted batch
        return f"record count {count} with lastOffsetDelta {fields[6]}"
    return None


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    """The batch with BaseOffset replaced (not covered by the CRC)."""
    return I64.pack(base_offset) + batch[8:]


def with_log_append_time(batch: bytes, ts: int) -> bytes:
    """Mark a batch LogAppendTime with maxTimestamp = ts, recomputing the CRC."""
    attrs = struct.unpack_from(">h", batch, ATTRS_AT)[0] | TIMESTAMP_LOG_APPEND
    tail = bytearray(batch[CRC_START:])
    struct.pack_into(">h", tail, 0, attrs)
    struct.pack_into(">q", tail, MAX_TS_AT - CRC_START, ts)
    return batch[:CRC_AT] + struct.pack(">I", crc32c(tail)) + bytes(tail)


# ---------------------------------------------------------------- compression

def _snappy_decompress(data) -> bytes:
    """Raw snappy (librdkafka) or the xerial block framing (Java, kafka-python)."""
    data = bytes(data)
    if not data.startswith(XERIAL_MAGIC):
        return cramjam.snappy.decompress_raw(data)
    out = bytearray()
    pos = 16
    while pos + 4 <= len(data):
        n = struct.unpack_from(">i", data, pos)[0]
        pos += 4
        out += bytes(cramjam.snappy.decompress_raw(data[pos:pos + n]))
        pos += n
    return bytes(out)


_DECOMPRESS = {GZIP: cramjam.gzip.decompress, SNAPPY: _snappy_decompress, LZ4: cramjam.lz4.decompress,
               ZSTD: cramjam.zstd.decompress}
_COMPRESS = {GZIP: cramjam.gzip.compress, SNAPPY: cramjam.snappy.compress_raw, LZ4: cramjam.lz4.compress,
             ZSTD: cramjam.zstd.compress}


def decompress(codec: int, data) -> bytes:
    if codec == NONE:
        return bytes(data)
    fn = _DECOMPRESS.get(codec)
    if fn is None:
        raise DecodeError(f"unknown compression codec {codec}")
    try:
        return bytes(fn(data))
    except Exception as exc:  # cramjam raises its own DecompressionError
        raise DecodeError(f"cannot decompress codec {codec}: {exc}") from exc


def compress(codec: int, data: bytes) -> bytes:
    return data if codec == NONE else bytes(_COMPRESS[codec](data))


# ---------------------------------------------------------------- records

@dataclasses.dataclass
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def _read_blob(buf, pos):
    n, pos = read_varint(buf, pos)
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(buf):
        raise DecodeError("truncated record field")
    return bytes(buf[pos:end]), end


def decode_records(payload, count: int) -> list[Record]:
    """Every record of a decompressed records section."""
    out = []
    pos = 0
    for _ in range(count):
        length, pos = read_varint(payload, pos)
        end = pos + length
        if length < 0 or end > len(payload):
            raise DecodeError("record length out of range")
        pos += 1  # attributes (unused)
        ts_delta, pos = read_varint(payload, pos)
        off_delta, pos = read_varint(payload, pos)
        key, pos = _read_blob(payload, pos)
        value, pos = _read_blob(payload, pos)
        nh, pos = read_varint(payload, pos)
        headers = []
        for _ in range(max(nh, 0)):
            hk, pos = _read_blob(payload, pos)
            hv, pos = _read_blob(payload, pos)
            headers.append(((hk or b"").decode("utf-8", "replace"), hv))
        out.append(Record(off_delta, ts_delta, key, value, headers))
        pos = end
    return out


def zigzag_at(buf: bytes, pos: int) -> tuple[int, int]:
    """A signed varint with the one- and two-byte cases (most lengths) decoded without a loop."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    b2 = buf[pos + 1]
    if b2 < 0x80:
        v = (b & 0x7F) | (b2 << 7)
        return (v >> 1) ^ -(v & 1), pos + 2
    return read_varint(buf, pos)


def scan_keys_headers(payload, count: int, only: dict[bytes, str] | None = None) -> list[tuple[bytes | None, list]]:
    """(key, headers) of each record, skipping timestamps, offsets and values: the produce path's
    index scan, a lighter twin of `decode_records` because it runs once per record of every keyed
    or headered batch. `only` (header key bytes → name): keep just those headers, the others are
    skipped without decoding their names."""
    buf = bytes(payload)
    out = []
    pos = 0
    try:
        for _ in range(count):
            length, pos = zigzag_at(buf, pos)
            end = pos + length
            if length < 0 or end > len(buf):
                raise DecodeError("record length out of range")
            pos += 1  # attributes
            while buf[pos] & 0x80:  # timestampDelta: skip the varint
                pos += 1
            pos += 1
            while buf[pos] & 0x80:  # offsetDelta
                pos += 1
            klen, pos = zigzag_at(buf, pos + 1)
            key = None
            if klen >= 0:
                key = buf[pos:pos + klen]
                pos += klen
            vlen, pos = zigzag_at(buf, pos)
            if vlen > 0:
                pos += vlen
            headers = []
            if buf[pos] != 0:
                nh, pos = zigzag_at(buf, pos)
                for _h in range(max(nh, 0)):
                    klen, pos = zigzag_at(buf, pos)
                    hk = buf[pos:pos + klen] if klen > 0 else b""
                    pos += max(klen, 0)
                    vlen, pos = zigzag_at(buf, pos)
                    hv = None
                    if vlen >= 0:
                        hv = buf[pos:pos + vlen]
                        pos += vlen
                    if only is None:
                        headers.append((hk.decode("utf-8", "replace"), hv))
                    elif hk in only:
                        headers.append((only[hk], hv))
            if pos > end:
                raise DecodeError("record fields overrun the record")
            out.append((key, headers))
            pos = end
    except IndexError as exc:
        raise DecodeError("truncated record") from exc
    return out


def header_key_bytes(name: str) -> bytes:
    """A header key as encoded inside a record (varint length, then UTF-8), for substring scans."""
    out = bytearray()
    _write_blob(out, name.encode("utf-8"))
    return bytes(out)


def _write_blob(out: bytearray, blob) -> None:
    if blob is None:
        write_varint(out, -1)
    else:
        write_varint(out, len(blob))
        out += blob


def encode_record(out: bytearray, offset_delta: int, timestamp_delta: int, key, value, headers) -> None:
    body = bytearray(b"\x00")
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_blob(body, key)
    _write_blob(body, value)
    write_varint(body, len(headers))
    for hk, hv in headers:
        _write_blob(body, hk.encode("utf-8") if isinstance(hk, str) else hk)
        _write_blob(body, hv)
    write_varint(out, len(body))
    out += body


def build_batch(records, base_offset: int = 0, base_timestamp: int = 0, compression: int = NONE,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                leader_epoch: int = -1, log_append_time: bool = False, max_timestamp: int | None = None,
                transactional: bool = False, offset_deltas=None, last_offset_delta: int | None = None) -> bytes:
    """A magic-2 batch from (timestamp, key, value, headers) tuples (offset deltas 0..n-1, or
    `offset_deltas` with `last_offset_delta` for a compacted batch, which may hold no record)."""
    payload = bytearray()
    max_ts = base_timestamp
    for i, (ts, key, value, headers) in enumerate(records):
        encode_record(payload, i if offset_deltas is None else offset_deltas[i], ts - base_timestamp, key, value,
                      headers)
        max_ts = max(max_ts, ts)
    if max_timestamp is not None:
        max_ts = max_timestamp
    body = compress(compression, bytes(payload))
    attrs = compression | (TIMESTAMP_LOG_APPEND if log_append_time else 0) | (TRANSACTIONAL if transactional else 0)
    n = len(records)
    tail = struct.pack(">hiqqqhii", attrs, n - 1 if last_offset_delta is None else last_offset_delta, base_timestamp, max_ts, producer_id, producer_epoch,
                       base_sequence, n) + body
    head = struct.pack(">qiib", base_offset, len(tail) + 9, leader_epoch, 2)
    return head + struct.pack(">I", crc32c(tail)) + tail


def control_batch(commit: bool, producer_id: int, producer_epoch: int, timestamp: int,
                  coordinator_epoch: int = 0) -> bytes:
    """A transaction marker as Kafka writes it: a transactional control batch of one record, key =
    version 0 + type (0 abort, 1 commit), value = version 0 + the coordinator's epoch."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    data = bytearray(build_batch([(timestamp, key, value, [])], base_timestamp=timestamp, producer_id=producer_id,
                                 producer_epoch=producer_epoch, transactional=True))
    struct.pack_into(">h", data, ATTRS_AT, TRANSACTIONAL | CONTROL)
    struct.pack_into(">I", data, CRC_AT, crc32c(bytes(data[ATTRS_AT:])))
    return bytes(data)
