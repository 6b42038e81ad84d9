"""ListOffsets (earliest, latest, max-timestamp and by-time offsets of a partition) and DeleteRecords
(the log start offset)."""
from __future__ import annotations

import dataclasses

import gateway.kafka.diskless as diskless
import gateway.kafka.errors as errors
import gateway.kafka.offsets_topic as offsets_topic
import gateway.kafka.topics as topics
from interop.txn_visibility import VISIBLE
from codec.kafka import apis, records
from gateway import tier_reads
from codec.remoting.message import BODY_AT, INNER_BATCH_FLAG, INT32, INT64, SYSFLAG_AT
from gateway.kafka.registry import RequestContext, handler
from interop.inner_batch import record_timestamps
from semantics.diskless import is_diskless
from semantics.retention import entry_units
from store.objstore.api import ObjectStoreError

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
TIME_SCAN_LIMIT = 200_000  # entries whose batch header is read looking for a timestamp
DEFAULT_AFTER_MAX_MS = 3_600_000  # message.timestamp.after.max.ms: how far a CreateTime may lead the store
_HEAD = BODY_AT + records.HEADER_SIZE
_MAX_TS: dict = {}  # (id(store), topic, partition) -> MaxTimestamp, the running answer to MAX_TIMESTAMP


def entry_max_timestamp(app, phys: int, size: int) -> int | None:
    """The largest record timestamp of the entry at `phys` from its batch header alone (a native
    message: its born time); None when it cannot be read."""
    head = app.store.read_entry(phys, min(size, _HEAD))
    if len(head) < BODY_AT:
        return None
    if not INT32.unpack_from(head, SYSFLAG_AT)[0] & INNER_BATCH_FLAG or len(head) < _HEAD:
        msg = app.store.get(phys)
        return None if msg is None else max(ts for _d, ts in record_timestamps(msg))
    return INT64.unpack_from(head, BODY_AT + records.MAX_TS_AT)[0]


def first_record_at_or_after(app, phys: int, start: int, ts: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the entry's first record at offset >= start with timestamp >= ts."""
    msg = app.store.get(phys)
    if msg is None:
        return None
    for delta, rts in record_timestamps(msg):
        if msg.queue_offset + delta >= start and rts >= ts:
            return msg.queue_offset + delta, rts
    return None


def offset_for_time(app, cfg, topic: str, partition: int, ts: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record (by offset) whose timestamp is >= ts, or (-1, -1), as
    Kafka's time index answers. A record's CreateTime leads its store time by at most
    message.timestamp.after.max.ms, so no record stored before ts minus that can match: the batch
    headers are read from there (decoding only a batch whose max timestamp reaches ts). Below the
    local start the tier's manifests narrow it to the one segment whose records reach ts."""
    try:
        lead = int((cfg.attributes or {}).get("message.timestamp.after.max.ms", DEFAULT_AFTER_MAX_MS))
    except ValueError:
        lead = DEFAULT_AFTER_MAX_MS
    s = app.store
    low, high = s.min_offset(topic, partition), s.max_offset(topic, partition)
    tiered = getattr(s, "record_time_start", None)  # the tier's manifests hold each segment's record times
    start = tiered(topic, partition, ts, lead) if tiered is not None else None
    start = max(s.offset_for_timestamp(topic, partition, max(ts - lead, 0)) if start is None else start, low)
    for n, (first, phys, size) in enumerate(entry_units(s, topic, partition, start, high)):
        if n >= TIME_SCAN_LIMIT:
            break
        top = entry_max_timestamp(app, phys, size)
        if top is not None and top >= ts:
            found = first_record_at_or_after(app, phys, max(first, low), ts)
            if found is not None:
                return found
    return -1, -1


@dataclasses.dataclass
class MaxTimestamp:
    scanned_to: int = 0  # entries before this offset are in the answer
    ts: int = -1
    first: int = -1  # the entry holding the answer: its first offset and phys
    phys: int = -1


def max_timestamp(app, topic: str, partition: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record with the largest timestamp in the partition, or
    (-1, -1); the batch headers are read once, from where the last answer's scan stopped (again from
    the start when the entry holding the answer is gone: log start moved, compaction)."""
    s = app.store
    low, high = s.min_offset(topic, partition), s.max_offset(topic, partition)
    key = (id(s), topic, partition)
    state = _MAX_TS.get(key)
    if state is None or state.scanned_to > high or (state.first >= 0 and (
            state.first < low or [u[0] for u in s.units(topic, partition, state.first, 1)] != [state.phys])):
        state = _MAX_TS[key] = MaxTimestamp(scanned_to=low)
    for first, phys, size in entry_units(s, topic, partition, max(state.scanned_to, low), high):
        top = entry_max_timestamp(app, phys, size)
        if top is not None and top > state.ts:
            state.ts, state.first, state.phys = top, first, phys
    state.scanned_to = high
    if state.first < 0:
        return -1, -1
    found = first_record_at_or_after(app, state.phys, max(state.first, low), state.ts)
    return found if found is not None else (-1, -1)


def list_offset(app, cfg, topic: str, partition: int, ts: int) -> tuple[int, int]:
    """(offset, timestamp) ListOffsets answers for one partition and one requested timestamp."""
    if ts == LATEST:  # the high watermark on a replicated partition
        return app.replication.readable_end(topic, partition, app.store.max_offset(topic, partition)), -1
    if ts == EARLIEST:  # with a tier: the remote start (KIP-405)
        return app.store.min_offset(topic, partition), -1
    local_start = getattr(app.store, "local_min_offset", None)
    if ts == EARLIEST_LOCAL:  # the local log start; without a tier the local log is the whole log
        return (local_start or app.store.min_offset)(topic, partition), -1
    if ts == MAX_TIMESTAMP:
        return max_timestamp(app, topic, partition)
    if ts == LATEST_TIERED and local_start is not None:  # the highest offset committed to the tier
        end = app.store.remote.end(topic, partition)
        return (-1 if end is None else end - 1), -1
    if ts < 0:  # EARLIEST_PENDING_UPLOAD (and LATEST_TIERED without a tier): not answered
        return -1, -1
    return offset_for_time(app, cfg, topic, partition, ts)


def leader_epoch(app, topic: str, partition: int) -> int:
    """The partition's leader epoch as Kafka reports it with a found offset: 0 on one node (its first and
    only leader), the placement's epoch in a cluster."""
    placed = app.ownership.assignment(topic, partition) if app.ownership.clustered else None
    return placed.epoch if placed is not None else 0


@handler(apis.LIST_OFFSETS)
async def list_offsets(ctx: RequestContext):
    app = ctx.app
    out = []
    for t in ctx.request["topics"]:
        name = t["name"]
        cfg = offsets_topic.readable(app, name)
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if not topics.has_partition(cfg, index):
                parts.append({"partition_index": index, "error_code": errors.UNKNOWN_TOPIC_OR_PARTITION})
                continue
            if not app.ownership.owns(name, index):
                parts.append({"partition_index": index, "error_code": errors.NOT_LEADER_OR_FOLLOWER})
                continue
            if app.diskless is not None and is_diskless(cfg):
                try:
                    offset, ts = await diskless.list_offset(app, name, index, p["timestamp"])
                except ObjectStoreError:
                    parts.append({"partition_index": index, "error_code": errors.KAFKA_STORAGE_ERROR})
                    continue
            else:
                offset, ts = await tier_reads.read(list_offset, app, cfg, name, index, p["timestamp"])
                if p["timestamp"] == LATEST and ctx.request.get("isolation_level") == 1:  # read_committed
                    offset = VISIBLE.stable_end(name, index, offset,  # the last stable offset
                                              app.store.min_offset(name, index))
            parts.append({"partition_index": index, "error_code": errors.NONE, "offset": offset,
                          "timestamp": ts, "leader_epoch": leader_epoch(app, name, index) if offset >= 0 else -1})
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
        cfg = offsets_topic.readable(app, name)
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
    app.transactions.layout.trim()  # the aborted transactions now wholly below a log start
    return {"topics": out}
