"""The keys and values of a Kafka records section, as the broker's schema validation reads them
(sans-I/O). Validation by id needs only the first 5 bytes of each (magic byte + schema id), so
`head=5` returns those slices and never copies a payload; the full level asks for whole payloads
(`head=None`). Timestamps, offsets and headers are skipped, not decoded; the one- and two-byte
varints (every length below 8 KiB) are read inline, as this loop runs once per produced record."""
from __future__ import annotations

from codec.kafka.records import zigzag_at
from codec.kafka.schema import DecodeError, read_varint


def columns(payload, count: int, keys: bool, values: bool,
            head: int | None = 5) -> tuple[list | None, list | None]:
    """(keys, values) of the `count` records, each None when null and cut to `head` bytes when
    given; a column not asked for is None. DecodeError when the section is not `count` records."""
    buf = bytes(payload)
    n = len(buf)
    limit = (1 << 62) if head is None else head
    key_list = [] if keys else None
    value_list = [] if values else None
    keep_key, keep_value = key_list.append if keys else None, value_list.append if values else None
    pos = 0
    try:
        for _ in range(count):
            b = buf[pos]  # the record's length; one- and two-byte varints inline (below 8 KiB)
            if b < 0x80:
                start = pos + 1
                end = start + ((b >> 1) ^ -(b & 1))
            else:
                b2 = buf[pos + 1]
                if b2 < 0x80:
                    b = (b & 0x7F) | (b2 << 7)
                    start = pos + 2
                    end = start + ((b >> 1) ^ -(b & 1))
                else:
                    length, start = read_varint(buf, pos)
                    end = start + length
            pos = start + 1  # past the attributes byte
            if not pos < end <= n:
                raise DecodeError("record length out of range")
            while buf[pos] > 0x7F:  # timestampDelta
                pos += 1
            pos += 1
            while buf[pos] > 0x7F:  # offsetDelta
                pos += 1
            b = buf[pos + 1]  # the key's length; 0x01 is -1, a null key
            if b == 1:
                pos += 2
                if keys:
                    keep_key(None)
            else:
                klen, pos = zigzag_at(buf, pos + 1)
                if klen >= 0:
                    if pos + klen > end:
                        raise DecodeError("record key out of range")
                    if keys:
                        keep_key(buf[pos:pos + (klen if klen < limit else limit)])
                    pos += klen
                elif keys:
                    keep_key(None)
            if values:
                b = buf[pos]
                if b < 0x80:
                    vlen = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    b2 = buf[pos + 1]
                    if b2 < 0x80:
                        b = (b & 0x7F) | (b2 << 7)
                        vlen = (b >> 1) ^ -(b & 1)
                        pos += 2
                    else:
                        vlen, pos = read_varint(buf, pos)
                if pos + vlen > end:
                    raise DecodeError("record value out of range")
                keep_value(None if vlen < 0 else buf[pos:pos + (vlen if vlen < limit else limit)])
            pos = end
    except IndexError:
        raise DecodeError("truncated record") from None
    return key_list, value_list
