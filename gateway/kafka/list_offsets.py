"""ListOffsets (earliest, latest, max-timestamp and by-time offsets of a partition) and DeleteRecords
(the log start offset)."""
from __future__ import annotations

import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from interop.inner_batch import record_timestamps

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
TIME_SCAN_LIMIT = 10_000  # entries scanned forward for a CreateTime match


def batch_at(app, topic: str, partition: int, offset: int):
    """(first offset, stored entry) of the entry holding `offset`, or (None, None)."""
    units = app.store.units(topic, partition, offset, 1)
    if not units:
        return None, None
    msg = app.store.get(units[0][0])
    return (msg.queue_offset, msg) if msg is not None else (None, None)


def offset_for_time(app, topic: str, partition: int, ts: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record with timestamp >= ts, or (-1, -1).

    The store finds the first entry stored at or after ts; record timestamps are not later than
    the store time, so no earlier entry can match and we scan forward from there."""
    high = app.store.max_offset(topic, partition)
    offset = max(app.store.offset_for_timestamp(topic, partition, ts), app.store.min_offset(topic, partition))
    for _ in range(TIME_SCAN_LIMIT):
        if offset >= high:
            break
        first, msg = batch_at(app, topic, partition, offset)
        if msg is None:
            break
        for delta, rts in record_timestamps(msg):
            if first + delta >= offset and rts >= ts:
                return first + delta, rts
        offset = first + max(msg.batch_count, 1)
    return -1, -1


def list_offset(app, topic: str, partition: int, ts: int) -> tuple[int, int]:
    """(offset, timestamp) ListOffsets answers for one partition and one requested timestamp."""
    if ts == LATEST:  # the high watermark on a replicated partition
        return app.replication.readable_end(topic, partition, app.store.max_offset(topic, partition)), -1
    if ts == EARLIEST:
        return app.store.min_offset(topic, partition), -1
    if ts == MAX_TIMESTAMP:
        high = app.store.max_offset(topic, partition)
        if high <= app.store.min_offset(topic, partition):
            return -1, -1
        first, msg = batch_at(app, topic, partition, high - 1)
        best = max(record_timestamps(msg), key=lambda r: r[1])
        return first + best[0], best[1]
    return offset_for_time(app, topic, partition, ts)


@handler(apis.LIST_OFFSETS)
async def list_offsets(ctx: RequestContext):
    app = ctx.app
    out = []
    for t in ctx.request["topics"]:
        name = t["name"]
        cfg = topics.existing(app, name)
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if not topics.has_partition(cfg, index):
                parts.append({"partition_index": index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION})
                continue
            if not app.ownership.owns(name, index):
                parts.append({"partition_index": index, "error_code": errors.NOT_LEADER_OR_FOLLOWER})
                continue
            offset, ts = list_offset(app, name, index, p["timestamp"])
            parts.append({"partition_index": index, "error_code": errors.NONE, "offset": offset,
                          "timestamp": ts, "leader_epoch": -1})
        out.append({"name": name, "partitions": parts})
    return {"topics": out}


@handler(apis.DELETE_RECORDS)
async def delete_records(ctx: RequestContext):
    """Move each partition's log start offset up to the requested offset (-1: the high watermark);
    ListOffsets EARLIEST, Fetch and Produce's log_start_offset then start there."""
    app = ctx.app
    out = []
    for t in ctx.request["topics"]:
        name = t["name"]
        cfg = topics.existing(app, name)
        parts = []
        for p in t["partitions"]:
            index, offset = p["partition_index"], p["offset"]
            entry = {"partition_index": index, "low_watermark": -1}
            high = app.store.max_offset(name, index) if topics.has_partition(cfg, index) else None
            if high is None:
                entry["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
            elif offset == LATEST or 0 <= offset <= high:
                entry.update(error_code=errors.NONE, low_watermark=app.store.delete_records(
                    name, index, high if offset == LATEST else offset))
            else:
                entry["error_code"] = errors.OFFSET_OUT_OF_RANGE
            parts.append(entry)
        out.append({"name": name, "partitions": parts})
    return {"topics": out}
