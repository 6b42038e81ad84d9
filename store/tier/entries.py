"""The fields of a sealed CommitLog file's entries that an upload needs (topic, queue, offsets, store
time, record time bounds, tags code, index keys), read without decoding the entries: one struct
unpack of the header fields used, the topic's name and each distinct properties string parsed once
per file (a Kafka producer's batches all carry the same `INNER_NUM`; a RocketMQ message's unique
keys are parsed, but only for the topics asked for). `codec.remoting.message.decode` built a whole
StoredMessage per entry (hosts, msgId, a copy of the entry without its body): ~9 us an entry, the
walk's whole cost with small entries.

The walk stops where `decode` would refuse an entry (the rest of a file that was never filled, or a
corrupt one), at the same entry: `tests/tier/test_tier_entries.py` holds the two side by side."""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from codec.kafka import records
from codec.remoting import message as M

# size, magic, queue id, queue offset, physical offset, sys flag, born time, store time, body length
_HEAD = struct.Struct(">iI4xi4xqqiq8xq20xi")
assert _HEAD.size == M.HEADER_SIZE
_PROPS_LEN = struct.Struct(">h")
_ATTRS = struct.Struct(">h")
_TIMES = struct.Struct(">qq")  # a Kafka batch's baseTimestamp, maxTimestamp
_V6 = M.BORNHOST_V6_FLAG | M.STOREHOSTADDRESS_V6_FLAG
_INNER_NUM, _TAGS_CODES = M.PROP_INNER_NUM.encode(), M.PROP_TAGS_CODES.encode()


class Entry(NamedTuple):
    pos: int  # in the file
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    count: int  # offsets it holds (an inner batch's INNER_NUM), at least 1
    store_timestamp: int
    min_record_ts: int
    max_record_ts: int
    tags_code: int  # the ConsumeQueue's: the first of TAGS_CODES, else of TAGS / __LITE_TOPIC
    key_hashes: tuple  # key_hash of each distinct IndexFile key ("topic#key", message.index_keys)


class _Bad(Exception):
    """An entry `decode` would refuse: the walk ends before it."""


def key_hash(index_key: str) -> int:
    """A segment's key section hash of an IndexFile key ("topic#key")."""
    return zlib.crc32(index_key.encode())


def _props(topic: str, raw: bytes) -> tuple[int, int, tuple]:
    """(batch count, tags code, key hashes) of one entry's properties (raw UTF-8): what
    `message.decode` reads of them and `message.index_keys` / `tags_code_of` make of that, in
    one pass (a RocketMQ message's UNIQ_KEY makes every entry's properties differ)."""
    if not raw:
        return 1, 0, ()
    try:
        props = M.string_to_properties(str(raw, "utf-8"))
        count = int(props.pop(M.PROP_INNER_NUM)) if M.PROP_INNER_NUM in props else 1
        codes = [int(c) for c in props.pop(M.PROP_TAGS_CODES).split(",")] if M.PROP_TAGS_CODES in props else None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _Bad from exc
    code = codes[0] if codes else M.tags_code_of(props)
    inner = props.get(M.PROP_INNER_KEYS)
    if "KEYS" not in props and inner is None and "UNIQ_KEY" not in props and "__LITE_TOPIC" not in props:
        return count, code, ()
    if inner is not None:
        del props[M.PROP_INNER_KEYS]
    keys = dict.fromkeys(M.index_keys(topic, props, inner.split(" ") if inner is not None else None))
    return count, code, tuple(key_hash(k) for k in keys)


def _valid_props(raw: bytes) -> bool:
    """What `decode` checks of the properties of an entry not parsed further: UTF-8, and the
    reserved numbers it reads."""
    if raw.isascii() and _INNER_NUM not in raw and _TAGS_CODES not in raw:
        return True
    try:
        _props("", raw)
    except _Bad:
        return False
    return True


def scan(data, file_start: int, wanted=None):
    """Every entry of a sealed CommitLog file as an `Entry`, in file order; those of topics
    `wanted(topic)` refuses (asked once per topic; None: every topic is wanted) with count 0 and
    key_hashes None, nothing of their properties parsed. Stops at the blank marker or at the first
    byte that is not an entry."""
    end = len(data)
    topics: dict[bytes, tuple[str, bool]] = {}  # the topic field's bytes -> (name, wanted)
    parsed: dict[tuple[str, bytes], tuple] = {}  # (topic, properties' bytes) -> _props(...)
    head, plen_of = _HEAD.unpack_from, _PROPS_LEN.unpack_from
    pos = 0
    while pos + M.HEADER_SIZE <= end:
        size, magic, qid, qoff, phys, sys_flag, born_ts, store_ts, body_len = head(data, pos)
        if (magic != M.MAGIC_V1 or sys_flag & _V6 or size < M.FIXED_SIZE or pos + size > end or body_len < 0
                or M.HEADER_SIZE + body_len + 3 > size or phys != file_start + pos):
            return
        at = pos + M.HEADER_SIZE + body_len
        tlen = data[at]
        t_end = at + 1 + tlen
        if t_end + 2 > pos + size:
            return
        tfield = bytes(data[at + 1:t_end])
        known = topics.get(tfield)
        if known is None:
            try:
                name = str(tfield, "utf-8")
            except UnicodeDecodeError:
                return
            known = topics[tfield] = (name, wanted is None or bool(wanted(name)))
        (plen,) = plen_of(data, t_end)
        if plen < 0 or t_end + 2 + plen != pos + size:
            return
        topic, ok = known
        praw = bytes(data[t_end + 2:pos + size])
        if not ok:
            if not _valid_props(praw):
                return
            yield Entry(pos, size, topic, qid, qoff, 0, store_ts, 0, 0, 0, None)
            pos += size
            continue
        pkey = (topic, praw)
        props = parsed.get(pkey)
        if props is None:
            try:
                props = _props(topic, praw)
            except _Bad:
                return
            if len(parsed) < 4096:
                parsed[pkey] = props
        count, code, keys = props
        lo, hi = _record_times(data, pos, sys_flag, born_ts, store_ts, body_len)
        yield Entry(pos, size, topic, qid, qoff, max(1, count), store_ts, lo, hi, code, keys)
        pos += size


def _record_times(data, pos: int, sys_flag: int, born_ts: int, store_ts: int, body_len: int) -> tuple[int, int]:
    """(low, high) record timestamps of an entry, from its batch header alone: an inner batch's first
    and max timestamp (LogAppendTime: max for both), a native message's born time. `high` is the
    largest (what ListOffsets by time asks), `low` the first record's (a Kafka batch's records need
    not be in time order)."""
    if not sys_flag & M.INNER_BATCH_FLAG:
        return born_ts, born_ts
    if body_len < records.HEADER_SIZE:
        return store_ts, store_ts  # no batch header (a reader says what is wrong)
    at = pos + M.HEADER_SIZE
    (attrs,) = _ATTRS.unpack_from(data, at + records.ATTRS_AT)
    base, top = _TIMES.unpack_from(data, at + records.MAX_TS_AT - 8)
    return (top if attrs & records.TIMESTAMP_LOG_APPEND else base), top
