"""OffsetForLeaderEpoch (v2-v4): where a leader epoch of a partition ended, which consumers ask after
a leader change to validate their position (and detect a truncated log), as Kafka's leader answers.

A partition's epochs are the replication layer's table (`semantics.replication.epochs`: which epoch
started at which offset) for a replicated queue; a queue without one has a single epoch, its current
one, from offset 0: the placement's epoch in a cluster, 0 on one gateway (what ListOffsets reports).
Only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere); a request's current leader epoch older
than the leader's is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.

A diskless partition's log is its index in the bucket, never truncated (entries are only added, or
dropped at the front by retention), and the local epoch table says nothing of it (every epoch starts
at local offset 0): any epoch up to the current one ends at the index's end, read fresh. Answered
from the local table, a consumer's position looked truncated after each leader change and it went
back to offset 0 (the fault harness's diskless workload found it: docs/faults-diskless.md)."""
from __future__ import annotations

import bisect

import trio

import gateway.kafka.errors as errors
import gateway.kafka.offsets_topic as offsets_topic
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.list_offsets import leader_epoch
from gateway.kafka.registry import RequestContext, handler
from semantics.diskless import is_diskless
from store.objstore.api import ObjectStoreError

UNDEFINED = -1


def epoch_end(pairs: list[tuple[int, int]], requested: int, log_end: int) -> tuple[int, int]:
    """(epoch, end offset) Kafka's leader-epoch cache answers for `requested` (LeaderEpochFileCache.
    endOffsetFor): the latest epoch ends at the log end; an older one at the next known epoch's start,
    answered with the largest known epoch not above it (or itself, when it is older than them all);
    an undefined or a future epoch is (UNDEFINED, UNDEFINED). `pairs`: (epoch, start offset), ascending."""
    if requested == UNDEFINED or not pairs:
        return UNDEFINED, UNDEFINED
    if requested == pairs[-1][0]:
        return requested, log_end
    epochs = [e for e, _ in pairs]
    higher = bisect.bisect_right(epochs, requested)  # the first epoch above the requested one
    if higher == len(pairs):
        return UNDEFINED, UNDEFINED
    floor = pairs[higher - 1][0] if higher > 0 else requested
    return floor, pairs[higher][1]


def batch_epochs(app, name: str, index: int):
    """`offset -> the leader epoch that wrote it` for a replicated queue (the epochs Fetch writes into
    served batches, so clients have a position epoch to validate after a leader change); None for a
    queue without an epoch table (a single gateway's: batches keep epoch -1, as Metadata says)."""
    if not app.replication.replicates(name, index):
        return None
    pairs = app.replication.epochs.entries(name, index)
    if not pairs:
        return None
    starts = [start for _, start in pairs]
    return lambda offset: pairs[max(bisect.bisect_right(starts, offset) - 1, 0)][0]


def _epochs(app, name: str, index: int) -> tuple[int, list[tuple[int, int]]]:
    """(the leader's current epoch, the partition's (epoch, start offset) pairs)."""
    role = app.replication.role(name, index) if app.replication.replicates(name, index) else None
    current = role.epoch if role is not None else leader_epoch(app, name, index)
    pairs = app.replication.epochs.entries(name, index) if role is not None else []
    if not pairs or pairs[-1][0] < current:
        pairs.append((current, pairs[-1][1] if pairs else 0))
    return current, pairs


async def _diskless_ends(app, request) -> dict:
    """(topic, partition) -> the index's end after a refresh (None: the store failed) for the
    diskless partitions asked about."""
    ends = {}
    if app.diskless is None:
        return ends
    for t in request["topics"]:
        cfg = app.store.topics.get(t["topic"])
        if cfg is None or not is_diskless(cfg):
            continue
        for p in t["partitions"]:
            if topics.has_partition(cfg, p["partition"]):
                try:
                    ends[(t["topic"], p["partition"])] = await trio.to_thread.run_sync(
                        app.diskless.index.refresh, t["topic"], p["partition"])
                except ObjectStoreError:
                    ends[(t["topic"], p["partition"])] = None
    return ends


def _partition(app, name: str, cfg, p: dict, diskless_ends: dict) -> dict:
    index = p["partition"]
    out = {"partition": index, "error_code": errors.NONE, "leader_epoch": UNDEFINED, "end_offset": UNDEFINED}
    if not topics.has_partition(cfg, index):
        out["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
        return out
    if not app.ownership.owns(name, index) or app.replication.write_refusal(name, index):
        out["error_code"] = errors.NOT_LEADER_OR_FOLLOWER
        return out
    current, pairs = _epochs(app, name, index)
    asked = p["current_leader_epoch"]
    if asked != UNDEFINED and asked != current:
        out["error_code"] = errors.FENCED_LEADER_EPOCH if asked < current else errors.UNKNOWN_LEADER_EPOCH
        return out
    if (name, index) in diskless_ends:
        end = diskless_ends[(name, index)]
        if end is None:
            out["error_code"] = errors.KAFKA_STORAGE_ERROR
        elif p["leader_epoch"] != UNDEFINED and p["leader_epoch"] <= current:
            out["leader_epoch"], out["end_offset"] = p["leader_epoch"], end
        return out
    out["leader_epoch"], out["end_offset"] = epoch_end(pairs, p["leader_epoch"], app.store.max_offset(name, index))
    return out


@handler(apis.OFFSET_FOR_LEADER_EPOCH)
async def offset_for_leader_epoch(ctx: RequestContext):
    app = ctx.app
    out = []
    ends = await _diskless_ends(app, ctx.request)
    for t in ctx.request["topics"]:
        name = t["topic"]
        cfg = offsets_topic.readable(app, name)
        out.append({"topic": name, "partitions": [_partition(app, name, cfg, p, ends) for p in t["partitions"]]})
    return {"throttle_time_ms": 0, "topics": out}
