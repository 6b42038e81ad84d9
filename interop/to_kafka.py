"""Stored entries as Kafka record batches, where they are not served verbatim.

An inner-batch entry is its RecordBatch with BaseOffset patched (done in place by the Fetch path,
`gateway.kafka.fetch`); a native RocketMQ message becomes a one-record magic-2 batch; a filtered
view serves the matching records of an inner batch re-encoded with the view's offsets.
"""
from __future__ import annotations

from codec.kafka import records
from codec.remoting.message import BODY_AT, BODY_LENGTH_AT, INT32
from interop.headers import message_headers, tag_code


def native_batch(msg, offset: int) -> bytes:
    """A RocketMQ message as a one-record batch at `offset`: properties become headers, KEYS the key."""
    key, headers = message_headers(msg.properties)
    return records.build_batch([(msg.born_timestamp, key, msg.body, headers)],
                               base_offset=offset, base_timestamp=msg.born_timestamp)


def view_batch(raw, offset: int, count: int, filt) -> bytes:
    """What a view serves from the inner-batch entry `raw`, whose last `count` matching records
    are at view offsets `offset`.. (the view's units from `offset` on that point at this entry).

    When every record matches, the batch is served verbatim (a view of every tag holds all its
    offsets, the gaps of a batch stored with gaps too, so it serves that one verbatim as well); otherwise the matching records
    (the last `count` of them) are re-encoded uncompressed with the view's offsets (per-record
    work, views only). Empty when none matches (the entry changed under the view)."""
    blen = INT32.unpack_from(raw, BODY_LENGTH_AT)[0]
    body = raw[BODY_AT:BODY_AT + blen]
    b = records.parse_batches(body)[0]
    units = b.last_offset_delta + 1
    if count == b.record_count == units:  # every record matches
        return records.with_base_offset(body, offset)
    if filt.match_all and count <= units:  # a batch with gaps: a view of every tag keeps them, as the base does
        return records.with_base_offset(body, offset + count - units)
    recs = records.decode_records(b.records_bytes(), b.record_count)
    matching = [r for r in recs if filt.matches_code(tag_code(r.headers) or 0)][-count:]
    log_append = bool(b.attributes & records.TIMESTAMP_LOG_APPEND)
    rows = [(b.max_timestamp if log_append else b.base_timestamp + r.timestamp_delta, r.key, r.value, r.headers)
            for r in matching]
    if not rows:
        return b""
    return records.build_batch(rows, base_offset=offset, base_timestamp=rows[0][0], log_append_time=log_append,
                               max_timestamp=max(r[0] for r in rows))
