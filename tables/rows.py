"""Stored entries as table rows: one `Row` per logical message, the same for both protocols.

A Kafka RecordBatch is stored verbatim as one inner-batch entry: each record is a row with its exact
key, value and headers (repeats and binary values kept), offset = the entry's first offset + the
record's offset delta. A RocketMQ message is one row: its body, its properties as headers (as a
Kafka consumer sees them) and as `properties` (user properties only), KEYS as the key.
Runs in a worker thread (tables.writer), never on the event loop.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from codec.kafka.records import CONTROL, decode_records, parse_batches, stored_batch_problem
from codec.kafka.schema import DecodeError
from codec.remoting.message import COMPRESSED_FLAG, INNER_BATCH_FLAG
from interop.headers import KEYS, RESERVED_PROPS, TAGS, message_headers

LOG_APPEND_TIME = 0x08  # RecordBatch attributes: timestamp type
# RocketMQ's system properties (MessageConst.STRING_HASH_SET and ours): not user properties.
SYSTEM_PROPERTIES = frozenset((
    TAGS, KEYS, "UNIQ_KEY", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP",
    "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG",
    "MQ2_FLAG", "RECONSUME_TIME", "MSG_REGION", "TRACE_ON", "UNIQ_KEY", "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS",
    "SHARDING_KEY", "__STARTDELIVERTIME", "CLUSTER", "INSTANCE_ID", "CORRELATION_ID", "REPLY_TO_CLIENT",
    "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "MSG_TYPE", "POP_CK", "POP_CK_OFFSET", "1ST_POP_TIME",
    "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_OUT_MS", "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_DEL_UNIQKEY", "__BORNHOST", "INNER_MULTI_DISPATCH",
    "INNER_MULTI_QUEUE_OFFSET", "TRACE_CONTEXT", *RESERVED_PROPS))


@dataclass(slots=True)
class Row:
    key: bytes | None
    value: bytes | None
    headers: list  # [(name, bytes | None)] in order, repeats kept
    timestamp: int  # ms: the record timestamp (Kafka) / bornTimestamp (RocketMQ)
    partition: int
    offset: int
    tags: str | None
    keys: list
    properties: list  # [(name, str)]: user properties
    protocol: str  # "kafka" or "rocketmq"
    msg_id: str | None
    store_timestamp: int  # ms, when the log took it (the lag metric)


class Undecodable(Exception):
    """An entry whose bytes are not a sound record batch (reported by the writer, never a row)."""


def entry_rows(msg, first_offset: int, start: int) -> list[Row]:
    """The rows of one stored entry whose offsets are >= `start` (an inner batch may begin before
    the writer's cursor after a restart inside it)."""
    if msg.sys_flag & INNER_BATCH_FLAG:
        return [r for r in _batch_rows(msg, first_offset) if r.offset >= start]
    if first_offset < start:
        return []
    return [_native_row(msg, first_offset)]


def _batch_rows(msg, first: int) -> list[Row]:
    try:
        problem = stored_batch_problem(msg.body, 0, len(msg.body))
        if problem is not None:
            raise DecodeError(problem)
        batch = parse_batches(msg.body)[0]
        if batch.attributes & CONTROL:
            return []
        records = decode_records(batch.records_bytes(), batch.record_count)
    except (DecodeError, struct.error, ValueError, IndexError) as exc:
        raise Undecodable(f"inner batch at CommitLog offset {msg.physical_offset}: {exc}") from None
    append_time = batch.attributes & LOG_APPEND_TIME
    out = []
    for rec in records:
        props = [(k, v.decode("utf-8", "replace")) for k, v in rec.headers if v is not None]
        text = dict(props)
        tags = text.get(TAGS)
        keys = text.get(KEYS, "").split() if KEYS in text else _utf8_key(rec.key)
        out.append(Row(rec.key, rec.value, rec.headers,
                       batch.max_timestamp if append_time else batch.base_timestamp + rec.timestamp_delta,
                       msg.queue_id, first + rec.offset_delta, tags, keys,
                       [(k, v) for k, v in props if k not in SYSTEM_PROPERTIES], "kafka",
                       text.get("UNIQ_KEY"), msg.store_timestamp))
    return out


def _utf8_key(key: bytes | None) -> list:
    if key is None:
        return []
    try:
        return key.decode("utf-8").split()
    except UnicodeDecodeError:
        return []


def _native_row(msg, offset: int) -> Row:
    props = msg.properties or {}
    body = msg.body
    if msg.sys_flag & COMPRESSED_FLAG:
        try:
            body = zlib.decompress(body)
        except zlib.error:
            pass  # kept as stored
    key, headers = message_headers(props)
    return Row(key, body, headers, msg.born_timestamp, msg.queue_id, offset, props.get(TAGS) or None,
               props.get(KEYS, "").split(), [(k, v) for k, v in props.items() if k not in SYSTEM_PROPERTIES],
               "rocketmq", props.get("UNIQ_KEY") or msg.msg_id or None, msg.store_timestamp)
