"""Kafka-produced entries for RocketMQ readers.

A Kafka RecordBatch is stored verbatim as one CommitLog entry with INNER_BATCH_FLAG and N
ConsumeQueue units. A RocketMQ pull must see N ordinary MessageDecoder-layout messages, so each
record becomes one: headers -> properties, key -> KEYS, record timestamp -> bornTimestamp,
queue offset = the entry's first offset + record offset delta (physical offset stays the entry's);
the offsets of a batch stored with gaps (records waiting elsewhere, compacted ones) hold no message.
A record without a UNIQ_KEY header gets a stable one naming the entry and the record index, so a
RocketMQ consumer's CONSUMER_SEND_MSG_BACK (which names the entry's offset and the message id)
can find that one record again.
"""
from __future__ import annotations

import struct

from codec.kafka.records import LAST_OFFSET_DELTA_AT, decode_records, parse_batches, stored_batch_problem
from codec.kafka.schema import DecodeError
from codec.remoting import message as smsg
from codec.remoting.message import INNER_BATCH_FLAG, NEED_UNWRAP_FLAG, Message
from interop.damaged import DAMAGED
from interop.headers import KEYS, record_properties
from interop.txn_visibility import VISIBLE

__all__ = ["INNER_BATCH_FLAG", "record_uniq_key", "records_as_messages", "expand", "expand_slots",
           "expand_matching_key", "find_record"]


def record_uniq_key(physical_offset: int, index: int) -> str:
    """32 hex digits like a UNIQ_KEY: entry offset (8 bytes), record index (4), marker (4)."""
    return f"{physical_offset:016X}{index:08X}4B414641"


def records_as_messages(m) -> list[Message | None]:
    """The logical messages of an inner-batch StoredMessage, one per offset of the batch (index =
    offset delta): None at an offset the batch holds no record for (a gap: its record waits
    elsewhere, delayed or in a transaction, or was compacted away); none at all when its body is not
    a sound record batch (skipped and reported once: interop.damaged)."""
    try:
        if VISIBLE.hidden(m):  # a transaction marker, an aborted or not yet stable Kafka transaction's batch
            return [None] * (smsg.INT32.unpack_from(m.body, LAST_OFFSET_DELTA_AT)[0] + 1)
        return _records_as_messages(m)
    except (DecodeError, struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        DAMAGED.skip(m.physical_offset, m.topic, m.queue_id, f"inner batch cannot be decoded: {exc}")
        return []


def _records_as_messages(m) -> list[Message | None]:
    problem = stored_batch_problem(m.body, 0, len(m.body))
    if problem is not None:
        raise DecodeError(problem)
    batch = parse_batches(m.body)[0]
    gaps = batch.record_count != batch.last_offset_delta + 1
    out: list[Message | None] = [None] * (batch.last_offset_delta + 1) if gaps else []
    for i, rec in enumerate(decode_records(batch.records_bytes(), batch.record_count)):
        if gaps:
            i = rec.offset_delta
            if not 0 <= i < len(out):
                raise DecodeError(f"record offset delta {i} outside the batch")
        props = record_properties(rec)
        props.setdefault("UNIQ_KEY", record_uniq_key(m.physical_offset, i))
        logical = Message(topic=m.topic, queue_id=m.queue_id, body=rec.value or b"", properties=props,
                          flag=0, sys_flag=m.sys_flag & ~INNER_BATCH_FLAG & ~NEED_UNWRAP_FLAG,
                          born_timestamp=batch.base_timestamp + rec.timestamp_delta, born_host=m.born_host)
        if gaps:
            out[i] = logical
        else:
            out.append(logical)
    return out


def _encode(m, logical, queue_offset: int) -> bytes:
    return smsg.encode(logical, queue_offset=queue_offset, physical_offset=m.physical_offset,
                       store_timestamp=m.store_timestamp, store_host=m.store_host)


def expand(m, first_offset: int, start: int, subscription) -> list[bytes]:
    """Encoded messages of the batch from logical offset `start` on, keeping those the subscription
    filter (semantics.sql92.subscription_filter: tags or SQL92) matches."""
    out = []
    for i, logical in enumerate(records_as_messages(m)):
        qoff = first_offset + i
        if logical is None or qoff < start or not subscription.matches_properties(logical.properties):
            continue
        out.append(_encode(m, logical, qoff))
    return out


def expand_slots(m) -> list[bytes | None]:
    """Encoded messages of the batch, one per offset (index = offset delta), None at a gap."""
    first = m.queue_offset
    return [None if logical is None else _encode(m, logical, first + i)
            for i, logical in enumerate(records_as_messages(m))]


def expand_matching_key(m, key: str) -> list[bytes]:
    """QUERY_MESSAGE: the records of the batch whose KEYS (or UNIQ_KEY) contain `key`."""
    first = getattr(m, "queue_offset", 0)
    return [_encode(m, logical, first + i) for i, logical in enumerate(records_as_messages(m))
            if logical is not None and key in (logical.properties.get(KEYS) or "").split(" ") or logical.properties.get("UNIQ_KEY") == key]


def find_record(m, msg_id: str | None):
    """The record of inner batch `m` whose UNIQ_KEY is `msg_id`, as a StoredMessage (None if absent)."""
    for i, logical in enumerate(records_as_messages(m)):
        if logical is not None and logical.properties.get("UNIQ_KEY") == msg_id:
            return smsg.decode(_encode(m, logical, m.queue_offset + i))
    return None
