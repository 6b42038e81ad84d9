"""A Kafka RecordBatch as one inner-batch CommitLog entry, and what is read back from one.

Produce stores each RecordBatch verbatim as the body of one entry with `INNER_BATCH_FLAG` and
`batch_count` = its record count (one ConsumeQueue unit per record, so Kafka offsets are
ConsumeQueue offsets). What RocketMQ readers need besides the bytes goes into the entry's fields:
the per-record tags codes (from TAGS headers), the index keys (record keys and KEYS headers) and
the routing properties (DELAY / __STARTDELIVERTIME headers) the store routes the entry by.
A batch some of whose records wait elsewhere (delayed, transactional) is stored with gaps where
they are (`with_gaps`), so its records keep the offsets the produce response gave them.
"""
from __future__ import annotations

import dataclasses
import itertools
import struct

from codec.kafka import records
from codec.kafka.schema import DecodeError
from codec.remoting.message import BODY_AT, INNER_BATCH_FLAG, INT32, SYSFLAG_AT, Message
from interop.damaged import DAMAGED
from interop.headers import KEYS, ROUTING_HEADERS, TAGS, tag_code
from interop.txn_visibility import VISIBLE

# Letters from the least to the most frequent in text (uppercase ones are rarer still in payloads).
_RARE_FIRST = "ZQXJKVBPYGFWMUCLDRHSNIOATE"


def _rarest_letter(name: str) -> bytes:
    return min((c for c in name if c in _RARE_FIRST), key=_RARE_FIRST.index).encode()


# The header keys as they appear on the wire (zigzag varint length + name), each with a letter of
# it that payloads seldom hold: a batch whose first record has no key and no headers is scanned
# record by record only if one of these keys occurs in it, and a one-byte search (memchr, many
# times faster than a substring search for a short needle) rules a key out when its letter is absent.
_MARK_SCANS = tuple((records.header_key_bytes(name), _rarest_letter(name))
                    for name in (TAGS, KEYS, *ROUTING_HEADERS))


_INDEXED_HEADERS = {name.encode(): name for name in (TAGS, KEYS, *ROUTING_HEADERS)}


def _occurs(raw: bytes, mark: bytes, start: int) -> bool:
    """raw.find(mark, start) >= 0, found by hopping between the occurrences of the mark's first byte
    (its length varint: a control byte or '$'), at most one per 4 KiB before falling back to the
    substring search. bytes.find of these short needles runs at ~0.4 GB/s on uppercase-letter or
    random payloads (ProducerPerformance's are random uppercase), one-byte memchr at many GB/s; a
    visit costs about what the substring search spends on 256 bytes (measured)."""
    first = mark[:1]
    i = raw.find(first, start)
    for _ in range(16 + (len(raw) >> 12)):
        if i < 0:
            return False
        if raw.startswith(mark, i):
            return True
        i = raw.find(first, i + 1)
    return i >= 0 and raw.find(mark, i) >= 0


def _has_indexed_header_key(raw, start: int) -> bool:
    return any(raw.find(letter, start) >= 0 and _occurs(raw, mark, start) for mark, letter in _MARK_SCANS)


@dataclasses.dataclass(frozen=True, slots=True)
class EntryIndex:
    """What the store indexes and routes an inner batch by."""
    tags_codes: list[int] | None  # one per record, None when no record has a tag
    keys: list[str] | None  # index keys, None when there are none
    routing: dict[str, str]  # the routing properties of the batch ({} for an immediate batch)


NOT_INDEXED = EntryIndex(None, None, {})


def index_info(batch: records.Batch) -> EntryIndex:
    """The tags codes, keys and routing properties of a batch. Every record is decoded when the first
    record has a key or headers, or when a TAGS or KEYS header key occurs anywhere in the records
    or a DELAY or __STARTDELIVERTIME header key anywhere (C-speed substring searches), so the common
    keyless, headerless batch costs no per-record Python work. (A record key on a later record of a
    batch whose first record has no key or header, and that has none of those header keys, is not
    indexed; the key itself is stored.) A batch with routing properties is split by
    `split_by_routing` into runs that share them."""
    raw, start, payload = _records_section(batch)
    first = records.decode_records(payload, 1)[0]
    if first.key is None and not first.headers:
        if not _has_indexed_header_key(raw, start):
            return NOT_INDEXED
    routing = {}
    codes, keys = [], []
    any_tag = False
    for key, headers in records.scan_keys_headers(payload, batch.record_count, _INDEXED_HEADERS):
        code = tag_code(headers)
        any_tag = any_tag or code is not None
        codes.append(code or 0)
        for hk, hv in headers:
            if hk in ROUTING_HEADERS and hv and not routing.get(hk):
                routing[hk] = hv.decode("utf-8", "replace")
        keys += _index_keys(key, headers)
    return EntryIndex(codes if any_tag else None, keys or None, routing)


def _records_section(batch: records.Batch):
    """(bytes holding the records, where they start, a view of them): no copy when uncompressed."""
    if batch.compression == records.NONE:
        raw, start = batch.data, records.HEADER_SIZE
        return raw, start, memoryview(raw)[start:]
    raw = batch.records_bytes()
    return raw, 0, raw


_ROUTING_MARK_SCANS = _MARK_SCANS[2:]
_ROUTING_ONLY = {name.encode(): name for name in ROUTING_HEADERS}


def routing_headers(batch: records.Batch) -> list[tuple[int, str, bytes | None]]:
    """(record index, header name, value) of every DELAY / __STARTDELIVERTIME header of a batch,
    empty and null values too (the produce path checks them all); a batch where neither header key
    occurs costs only the C-speed searches. DecodeError for unreadable records."""
    raw, start, payload = _records_section(batch)
    if not any(raw.find(letter, start) >= 0 and _occurs(raw, mark, start) for mark, letter in _ROUTING_MARK_SCANS):
        return []
    scanned = records.scan_keys_headers(payload, batch.record_count, _ROUTING_ONLY)
    return [(i, name, value) for i, (_key, headers) in enumerate(scanned) for name, value in headers]


def _index_keys(key, headers) -> list[str]:
    """The index keys of one record: its KEYS header (space separated) and its UTF-8 key without spaces."""
    keys = []
    for hk, hv in headers:
        if hk == KEYS and hv:
            keys.extend(k for k in hv.decode("utf-8", "replace").split(" ") if k)
    if key:
        try:
            text = key.decode("utf-8")
        except UnicodeDecodeError:
            return keys
        if text and " " not in text:
            keys.append(text)
    return keys


def split_by_routing(b: records.Batch) -> list[tuple[records.Batch, range]] | None:
    """A batch whose records do not all carry the same DELAY / __STARTDELIVERTIME headers, cut into
    runs of records that do, each re-encoded with its own sequence range and given with the indexes
    of its records in `b`, so that an immediate record is not delayed with its neighbours; None when
    one entry fits all (the usual case)."""
    recs = records.decode_records(b.records_bytes(), b.record_count)
    runs = [list(g) for _k, g in itertools.groupby(
        enumerate(recs), key=lambda ir: [(k, v) for k, v in ir[1].headers if k in ROUTING_HEADERS and v])]
    if len(runs) == 1:
        return None
    out = []
    for run in runs:
        rows = [(b.base_timestamp + r.timestamp_delta, r.key, r.value, r.headers) for _i, r in run]
        seq = (b.base_sequence + run[0][0]) % (1 << 31) if b.base_sequence >= 0 else -1
        data = records.build_batch(rows, base_timestamp=rows[0][0], compression=b.compression,
                                   producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=seq,
                                   transactional=bool(b.attributes & records.TRANSACTIONAL))
        out.append((records.parse_batches(data)[0], range(run[0][0], run[-1][0] + 1)))
    return out


def with_gaps(b: records.Batch, index: EntryIndex, kept: set[int]) -> tuple[records.Batch, EntryIndex]:
    """The batch `b` as it is stored in its partition when only the records at indexes `kept` are
    stored there now (the others wait elsewhere: delayed, or a transaction's half): those records at
    their own offsets (offset delta = index in `b`), the others' offsets left empty, lastOffsetDelta,
    producer id, epoch and base sequence those of `b`. The gaps are what compaction leaves, so Kafka
    clients skip them; the batch may hold no record. Its index data has one tags code per offset
    (0 at the gaps, which no tag filter matches)."""
    recs = records.decode_records(b.records_bytes(), b.record_count) if kept else []  # a transaction's: none kept
    rows, deltas, keys = [], [], []
    for i, r in enumerate(recs):
        if i in kept:
            rows.append((b.base_timestamp + r.timestamp_delta, r.key, r.value, r.headers))
            deltas.append(i)
            keys += _index_keys(r.key, r.headers)
    data = records.build_batch(rows, base_timestamp=b.base_timestamp, compression=b.compression,
                               producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                               base_sequence=b.base_sequence, offset_deltas=deltas,
                               last_offset_delta=b.last_offset_delta)
    codes = index.tags_codes
    if codes is not None:
        codes = [c if i in kept else 0 for i, c in enumerate(codes)]
    return records.parse_batches(data)[0], EntryIndex(codes, keys or None, {})


def entry_message(topic: str, queue_id: int, b: records.Batch, index: EntryIndex, properties: dict, now: int,
                  append_time: bool) -> Message:
    """The inner-batch message that stores batch `b` (marked LogAppendTime = `now` when the topic
    says so); `properties` are the routing and transaction properties it goes with."""
    body = records.with_log_append_time(b.data, now) if append_time else b.data
    return Message(topic, queue_id, body, sys_flag=INNER_BATCH_FLAG, batch_count=b.last_offset_delta + 1,
                   tags_codes=index.tags_codes, keys=index.keys, properties=properties,
                   born_timestamp=now if append_time else b.max_timestamp)


def producer_fields(raw) -> tuple[int, int, int, int] | None:
    """(producer id, producer epoch, base sequence, offsets taken: lastOffsetDelta + 1, as Kafka
    derives a batch's last sequence) of the batch in a raw CommitLog entry (header fields only,
    nothing decoded); None when the entry is not an inner batch."""
    if len(raw) < BODY_AT + records.HEADER_SIZE or not INT32.unpack_from(raw, SYSFLAG_AT)[0] & INNER_BATCH_FLAG:
        return None
    pid, epoch, seq, _count = records.PRODUCER_FIELDS.unpack_from(raw, BODY_AT + records.PRODUCER_ID_AT)
    return pid, epoch, seq, INT32.unpack_from(raw, BODY_AT + records.LAST_OFFSET_DELTA_AT)[0] + 1


def present_offsets(msg) -> frozenset[int] | None:
    """The offset deltas of a stored inner batch that hold a record; None when every offset does
    (read from the header alone), for a plain entry, or when the batch cannot be decoded (its readers
    skip it). A batch stored with gaps (`with_gaps`, compaction) holds fewer records than offsets."""
    body = msg.body
    if not msg.sys_flag & INNER_BATCH_FLAG or len(body) < records.HEADER_SIZE:
        return None
    if VISIBLE.hidden(msg):  # a transaction marker, an aborted or not yet stable transaction's batch
        return frozenset()
    count = INT32.unpack_from(body, records.RECORD_COUNT_AT)[0]
    if count == INT32.unpack_from(body, records.LAST_OFFSET_DELTA_AT)[0] + 1:
        return None
    try:
        b = records.parse_batches(body)[0]
        return frozenset(r.offset_delta for r in records.decode_records(b.records_bytes(), b.record_count))
    except (DecodeError, struct.error, ValueError, IndexError):
        return None


def record_timestamps(msg) -> list[tuple[int, int]]:
    """(offset delta, timestamp) of each logical message of a stored entry; a batch that cannot be
    decoded counts as one message at its store timestamp (reported once: interop.damaged)."""
    if msg.sys_flag & INNER_BATCH_FLAG:
        try:
            problem = records.stored_batch_problem(msg.body, 0, len(msg.body))
            if problem is not None:
                raise DecodeError(problem)
            b = records.parse_batches(msg.body)[0]
            append_time = b.attributes & records.TIMESTAMP_LOG_APPEND
            if append_time and b.record_count == b.last_offset_delta + 1:  # no gaps: nothing to decode
                return [(i, b.max_timestamp) for i in range(b.record_count)]
            return [(r.offset_delta, b.max_timestamp if append_time else b.base_timestamp + r.timestamp_delta)
                    for r in records.decode_records(b.records_bytes(), b.record_count)]
        except (DecodeError, struct.error, ValueError, IndexError) as exc:
            DAMAGED.skip(msg.physical_offset, msg.topic, msg.queue_id, f"inner batch cannot be decoded: {exc}")
            return [(0, msg.store_timestamp)]
    return [(0, msg.born_timestamp)]


def is_gap(msg, present: frozenset[int] | None, offset: int) -> bool:
    """Does queue `offset` of stored entry `msg` (`present`: its `present_offsets`) hold no record?"""
    return present is not None and offset - msg.queue_offset not in present
