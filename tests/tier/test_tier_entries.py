"""store.tier.entries.scan (the upload's walk of a sealed CommitLog file, reading fields without
decoding entries) against codec.remoting.message.decode of the same bytes: the same fields for every
entry, and the walk ends at the same entry on bytes decode refuses."""
from __future__ import annotations

import random

import pytest

from codec.kafka import records
from codec.remoting import message as M
from store.tier import entries

START = 1 << 20
_BATCH_TIMES = records.MAX_TS_AT - 8  # baseTimestamp, then maxTimestamp, in a Kafka batch header


def _batch_body(rnd, base: int, top: int, log_append: bool) -> bytes:
    """A body with a Kafka batch header's attributes and timestamps where scan reads them."""
    body = bytearray(rnd.randbytes(records.HEADER_SIZE + rnd.randrange(200)))
    body[records.ATTRS_AT:records.ATTRS_AT + 2] = (records.TIMESTAMP_LOG_APPEND if log_append else 0).to_bytes(2, "big")
    body[_BATCH_TIMES:_BATCH_TIMES + 16] = base.to_bytes(8, "big") + top.to_bytes(8, "big")
    return bytes(body)


def _message(rnd, i: int) -> M.Message:
    topic = rnd.choice(["t", "u", "ü-topic"])
    kind = i % 6
    if kind == 0:
        return M.Message(topic, rnd.randrange(3), rnd.randbytes(50),
                         {"KEYS": f"k{i} k{i % 5}  z", "UNIQ_KEY": f"U{i}", "TAGS": rnd.choice(["a", "b"])})
    if kind == 1:
        return M.Message(topic, rnd.randrange(3), _batch_body(rnd, 1000 + i, 2000 + i, rnd.random() < .5),
                         sys_flag=M.INNER_BATCH_FLAG, batch_count=rnd.randrange(1, 80),
                         keys=[f"r{i}", f"r{i}", "s"] if rnd.random() < .5 else None,
                         tags_codes=[rnd.randrange(-5, 5), 7] if rnd.random() < .5 else None)
    if kind == 2:
        return M.Message(topic, 0, b"x", {"__LITE_TOPIC": f"lite{i % 3}", "UNIQ_KEY": f"U{i}"})
    if kind == 3:
        return M.Message(topic, 1, rnd.randbytes(10))
    if kind == 4:
        return M.Message(topic, 2, b"y" * 9, {"TAGS": "tä", "KEYS": "ü ö"}, tags_codes=[1, 2, 3], batch_count=3)
    return M.Message(topic, 0, b"z", {"a": "b"}, born_timestamp=rnd.randrange(10 ** 12, 2 * 10 ** 12))


def _file(seed: int, n: int = 120) -> bytes:
    rnd = random.Random(seed)
    parts, pos, next_offset = [], 0, {}
    for i in range(n):
        m = _message(rnd, i)
        q = next_offset.get((m.topic, m.queue_id), 0)
        raw = M.encode(m, queue_offset=q, physical_offset=START + pos, store_timestamp=10 ** 12 + pos)
        next_offset[(m.topic, m.queue_id)] = q + max(1, m.batch_count)
        parts.append(raw)
        pos += len(raw)
    return b"".join(parts) + M.BLANK.pack(64, M.BLANK_MAGIC) + bytes(56)


def _expected(data: bytes, wanted) -> list[tuple]:
    """What scan should give, from message.decode: entry after entry until one is refused."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        size = M.INT32.unpack_from(data, pos)[0]
        if size < M.FIXED_SIZE or pos + size > len(data):
            break
        try:
            m = M.decode(data, pos)
        except M.MessageFormatError:
            break
        if m.physical_offset != START + pos:
            break
        if not wanted(m.topic):
            out.append((pos, size, m.topic, None))
        else:
            keys = tuple(sorted({entries.key_hash(k) for k in M.index_keys(m.topic, m.properties, m.keys)}))
            code = m.tags_codes[0] if m.tags_codes else M.tags_code_of(m.properties)
            if m.sys_flag & M.INNER_BATCH_FLAG and len(m.body) < records.HEADER_SIZE:
                lo = hi = m.store_timestamp  # no batch header to read
            elif m.sys_flag & M.INNER_BATCH_FLAG:  # the batch header's attributes, baseTimestamp, maxTimestamp
                f = records.BATCH_HEADER.unpack_from(m.body)
                lo, hi = (f[8] if f[5] & records.TIMESTAMP_LOG_APPEND else f[7]), f[8]
            else:
                lo = hi = m.born_timestamp
            out.append((pos, size, m.topic, (m.queue_id, m.queue_offset, max(1, m.batch_count), m.store_timestamp,
                                             lo, hi, code, keys)))
        pos += size
    return out


def _scanned(data: bytes, wanted) -> list[tuple]:
    return [(e.pos, e.size, e.topic, None if e.key_hashes is None else
             (e.queue_id, e.queue_offset, e.count, e.store_timestamp, e.min_record_ts, e.max_record_ts, e.tags_code,
              tuple(sorted(e.key_hashes))))
            for e in entries.scan(data, START, wanted)]


WANTED = [lambda t: True, lambda t: t != "u", lambda t: False]


@pytest.mark.parametrize("seed", range(5))
def test_scan_gives_what_decode_gives(seed):
    data = _file(seed)
    for wanted in WANTED:
        expected = _expected(data, wanted)
        assert len(expected) == 120
        assert _scanned(data, wanted) == expected
    keys = [e.key_hashes for e in entries.scan(data, START)]
    assert all(len(set(k)) == len(k) for k in keys)  # a key named twice is indexed once


def test_scan_stops_where_decode_refuses_an_entry():
    """A byte changed in an entry's header, topic or properties: both walks end at the same entry
    (never one read past what the other refuses); 300 changes, some decode accepts."""
    ended_early = 0
    for seed in range(300):
        rnd = random.Random(seed)
        data = bytearray(_file(seed, 30))
        walked = _expected(bytes(data), WANTED[0])
        pos, size = rnd.choice([(p, s) for p, s, _t, _f in walked])
        at = rnd.choice([rnd.randrange(M.HEADER_SIZE), size - 1 - rnd.randrange(min(size - M.HEADER_SIZE - 1, 40))])
        data[pos + at] = rnd.choice([0xFF, 0x00, 0xC3, ord("A"), ord(","), 0x01, 0x02, data[pos + at] ^ 0x80])
        data = bytes(data)
        for wanted in WANTED:
            expected = _expected(data, wanted)
            assert _scanned(data, wanted) == expected, (seed, pos, at)
        ended_early += len(_expected(data, WANTED[0])) < 30
    assert ended_early > 50  # the changes did reach the refusals


def _set_field(data: bytearray, pos: int, at: int, value: int, width: int = 4) -> None:
    data[pos + at:pos + at + width] = value.to_bytes(width, "big", signed=value < 0)


@pytest.mark.parametrize("change", ["ipv6 host", "magic", "physical offset", "body length", "topic length",
                                    "properties length", "topic utf-8", "properties utf-8", "reserved number"])
def test_each_refusal_of_decode_ends_the_scan_there(change):
    data = bytearray(_file(7, 30))
    walked = _expected(bytes(data), WANTED[0])
    pos, size, topic, _fields = walked[10]
    body_len = M.INT32.unpack_from(data, pos + M.BODY_LENGTH_AT)[0]
    topic_at = pos + M.HEADER_SIZE + body_len
    props_at = topic_at + 1 + data[topic_at] + 2
    if change == "ipv6 host":
        _set_field(data, pos, M.SYSFLAG_AT, M.INT32.unpack_from(data, pos + M.SYSFLAG_AT)[0] | M.BORNHOST_V6_FLAG)
    elif change == "magic":
        _set_field(data, pos, M.MAGIC_AT, 0x12345678)
    elif change == "physical offset":
        _set_field(data, pos, M.PHYSICAL_OFFSET_AT, START + pos + 1, 8)
    elif change == "body length":
        _set_field(data, pos, M.BODY_LENGTH_AT, size)
    elif change == "topic length":
        data[topic_at] = 200
    elif change == "properties length":
        _set_field(data, props_at - 2, 0, 1, 2)
    elif change == "topic utf-8":
        data[topic_at + 1] = 0xFF
    else:  # entry 10 is of kind 4 (10 % 6): TAGS, KEYS and INNER_NUM
        props = bytes(data[props_at:pos + size])
        assert b"INNER_NUM\x013" in props
        data[props_at + props.index(b"INNER_NUM\x013") + 10] = 0xFF if change == "properties utf-8" else ord("x")
    data = bytes(data)
    for wanted in WANTED:
        expected = _expected(data, wanted)
        assert len(expected) == 10
        assert _scanned(data, wanted) == expected
