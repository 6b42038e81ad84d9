"""Kafka 4.x's CreateTime bounds (KIP-937): a produced record whose timestamp is more than
`message.timestamp.before.max.ms` behind or `message.timestamp.after.max.ms` ahead of the broker's clock
is refused with INVALID_TIMESTAMP, the whole batch, one `record_errors` entry per such record.

The topic's configs apply, else the broker defaults (Kafka's: before unlimited, after one hour). A
LogAppendTime topic stamps records itself and checks nothing.
"""
from __future__ import annotations

from codec.kafka import records
from codec.kafka.schema import DecodeError
from semantics.topic_configs import TOPIC_CONFIGS

INVALID_TIMESTAMP = 32
BATCH_MESSAGE = "One or more records have been rejected due to invalid timestamp"
NO_TIMESTAMP = -1  # a record without a timestamp is not checked
BEFORE, AFTER = "message.timestamp.before.max.ms", "message.timestamp.after.max.ms"


def bound(cfg, name: str) -> int:
    """The topic's setting of `name`, else Kafka's default."""
    value = (cfg.attributes or {}).get(name, TOPIC_CONFIGS[name].default)
    try:
        return int(str(value).strip())
    except ValueError:
        return int(TOPIC_CONFIGS[name].default)


def _record_timestamps(batch: records.Batch) -> list[int]:
    try:
        return [batch.base_timestamp + r.timestamp_delta
                for r in records.decode_records(batch.records_bytes(), batch.record_count)]
    except (DecodeError, ValueError):
        return [batch.max_timestamp]


def refused(cfg, batch: records.Batch, now: int) -> list[dict] | None:
    """The `record_errors` of a CreateTime batch with a timestamp out of bounds, or None when it may be
    stored. The header's max timestamp settles the common case without reading the records."""
    before = bound(cfg, BEFORE)
    low, high = now - before, now + bound(cfg, AFTER)
    if before >= now and batch.max_timestamp <= high:  # no lower bound since 1970: the header's max decides
        return None
    errors = [{"batch_index": i, "batch_index_error_message":
               f"Timestamp {ts} of message with offset {i} is out of range. "
               f"The timestamp should be within [{low}, {high}]"}
              for i, ts in enumerate(_record_timestamps(batch)) if ts != NO_TIMESTAMP and not low <= ts <= high]
    return errors or None
