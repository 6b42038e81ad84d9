"""The key and value of each record of a Kafka records section, as the broker's schema validation
reads them (sans-I/O). Validation by id needs only the first 5 bytes of each (magic byte + schema
id), so `head=5` returns those slices and never copies a payload; the full level asks for whole
payloads (`head=None`). Timestamps, offsets and headers are skipped, not decoded."""
from __future__ import annotations

from codec.kafka.schema import DecodeError, read_varint


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint, the one-byte case (short lengths, -1 for null) without a call."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    return read_varint(buf, pos)


def keys_values(payload, count: int, head: int | None = 5) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of each of `count` records (None when null), cut to `head` bytes when given;
    DecodeError when the section is not `count` well-formed records."""
    buf = bytes(payload)
    out = []
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
                key = buf[pos:pos + (klen if head is None else min(klen, head))]
                pos += klen
            vlen, pos = _varint(buf, pos)
            value = None
            if vlen >= 0:
                if pos + vlen > end:
                    raise DecodeError("record value out of range")
                value = buf[pos:pos + (vlen if head is None else min(vlen, head))]
            out.append((key, value))
            pos = end
    except IndexError:
        raise DecodeError("truncated record") from None
    return out
