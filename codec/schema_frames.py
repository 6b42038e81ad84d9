"""The key and value of each record of a Kafka records section, as the broker's schema validation
reads them (sans-I/O). Validation by id needs only the first 5 bytes of each (magic byte + schema
id), so `head=5` returns those slices and never copies a payload; the full level asks for whole
payloads (`head=None`). Timestamps, offsets and headers are skipped, not decoded."""
from __future__ import annotations

from codec.kafka.schema import DecodeError, read_varint


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint, the one- and two-byte cases (lengths up to 8 KiB, -1 for null) without a loop."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    b2 = buf[pos + 1]
    if b2 < 0x80:
        v = (b & 0x7F) | (b2 << 7)
        return (v >> 1) ^ -(v & 1), pos + 2
    return read_varint(buf, pos)


def keys_values(payload, count: int, head: int | None = 5) -> tuple[list, list]:
    """(keys, values) of the `count` records (None when null), each cut to `head` bytes when given;
    DecodeError when the section is not `count` well-formed records."""
    buf = bytes(payload)
    limit = (1 << 62) if head is None else head
    keys, values = [], []
    pos = 0
    try:
        for _ in range(count):
            length, pos = _varint(buf, pos)
            end = pos + length
            if length < 0 or end > len(buf):
                raise DecodeError("record length out of range")
            pos += 1  # attributes
            while buf[pos] & 0x80:  # timestampDelta
                pos += 1
            pos += 1
            while buf[pos] & 0x80:  # offsetDelta
                pos += 1
            klen, pos = _varint(buf, pos + 1)
            key = None
            if klen >= 0:
                if pos + klen > end:
                    raise DecodeError("record key out of range")
                key = buf[pos:pos + (klen if klen < limit else limit)]
                pos += klen
            vlen, pos = _varint(buf, pos)
            value = None
            if vlen >= 0:
                if pos + vlen > end:
                    raise DecodeError("record value out of range")
                value = buf[pos:pos + (vlen if vlen < limit else limit)]
            keys.append(key)
            values.append(value)
            pos = end
    except IndexError:
        raise DecodeError("truncated record") from None
    return keys, values
