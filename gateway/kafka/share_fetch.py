"""KIP-932 ShareFetch and ShareAcknowledge over `semantics.share_partitions` (in `app.kafka.shares`).

ShareFetch applies the acknowledgements it carries, then acquires up to `max_records` records from
the session's partitions (in the default batch-optimized mode on to the end of the stored batch
holding the last one, as Kafka does; waiting up to `max_wait_ms` for some) and answers each partition's
acquired ranges with their delivery counts plus the stored batches that hold them (the client
keeps only the acquired offsets). Answers leave once the logged ops are durable (`app.durable`).
"""
from __future__ import annotations

import trio

import gateway.kafka.errors as errors
import gateway.kafka.share_diskless as share_diskless
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.access_share import TOPIC_DENIED, may_read
from gateway.kafka.fetch import fetch_entries, read_batches
from gateway.kafka.registry import NODE_ID, RequestContext, handler
from gateway.kafka.state import kafka_state
from gateway.ops.stats import stats_of
from semantics.share_sessions import FINAL, INITIAL

LEADER = {"leader_id": NODE_ID, "leader_epoch": 0}
MAX_RECORDS = 10_000  # per request, whatever the client asks
DISKLESS_POLL_S = 0.25  # a long-polling ShareFetch looks at the diskless partitions' index this often
WHOLE_RANGE = 0x7FFFFFFF  # the acquired range is read whole: its bytes were bounded when acquiring
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1  # share_acquire_mode (KIP-1206): whole stored batches, or max_records strictly


def _resolved(app, topics_req) -> tuple[list, list]:
    """((topic name or None, topic id, partition, ack batches), ...) for the request's partitions."""
    out = []
    names = {}
    for t in topics_req or []:
        tid = bytes(t["topic_id"])
        if tid not in names:
            names[tid] = topics.name_of_topic_id(app, tid)
        for p in t["partitions"]:
            out.append((names[tid], tid, p["partition_index"], p.get("acknowledgement_batches") or []))
    return out, names


def _forgotten(app, data) -> list:
    out = []
    for t in data or []:
        name = topics.name_of_topic_id(app, bytes(t["topic_id"]))
        out += [(name, p) for p in t["partitions"]] if name else []
    return out


def _acknowledge(app, shares, group, member, parts, readable) -> tuple[dict, int]:
    """{(topic id, partition): error code} for the partitions with acknowledgements; log end offset."""
    codes, end = {}, 0
    for name, tid, p, batches in parts:
        if not batches:
            continue
        if name is not None and not readable(name):
            codes[(tid, p)] = TOPIC_DENIED
            continue
        if name is None or not topics.has_partition(topics.existing(app, name), p):
            codes[(tid, p)] = errors.UNKNOWN_TOPIC_OR_PARTITION
            continue
        code, e = shares.acknowledge(group, member, name, p, batches)
        codes[(tid, p)] = code
        end = max(end, e)
    return codes, end


def _ranges(deliveries) -> list[dict]:
    """Acquired offsets as (first, last, delivery count) runs."""
    out = []
    for d in deliveries:
        if out and out[-1]["last_offset"] == d.offset - 1 and out[-1]["delivery_count"] == d.count:
            out[-1]["last_offset"] = d.offset
        else:
            out.append({"first_offset": d.offset, "last_offset": d.offset, "delivery_count": d.count})
    return out


def byte_end(app, topic: str, partition: int, start: int, reach: int, max_bytes: int) -> int:
    """The offset after the stored batches from `start` whose sizes fit in `max_bytes` (the first
    one whatever its size), looking no further than `reach`: as Kafka, a ShareFetch acquires only
    within the batches it can send."""
    s = app.store
    high = min(s.max_offset(topic, partition), reach)
    entries = fetch_entries(s, topic, partition, start, high, max(max_bytes, 1))
    total = 0
    for i, (first, _phys, size) in enumerate(entries):
        if i and total + size > max_bytes:
            return first
        total += size
    if not entries:
        return start
    first, phys, _size = entries[-1]
    return s.entry_end(topic, partition, first, phys, high)


def _acquire_all(app, shares, group, member, partitions, max_records, max_bytes, whole) -> tuple[dict, int]:
    """{(topic, partition): entry} with acquired records, and the log end offset; `whole`: acquire
    on to the end of the last stored batch (batch-optimized mode). Each partition acquires within
    `max_bytes` of stored batches, and every batch holding an acquired record is sent; with
    `max_bytes` 0 nothing (as Kafka 4.3.1 answers: librdkafka 0180's fetch.max.bytes=0)."""
    out, end, left = {}, 0, max_records if max_bytes > 0 else 0
    for name, p in partitions:
        if left <= 0:
            break
        cfg = topics.existing(app, name)
        if not topics.has_partition(cfg, p):
            continue
        diskless = share_diskless.is_diskless_partition(app, name)
        ends = share_diskless.byte_end if diskless else byte_end

        def end_for(start, reach, t=name, q=p, ends=ends):
            return ends(app, t, q, start, reach, max_bytes)
        acquired = shares.acquire(group, member, name, p, left, whole_batches=whole, end_for=end_for)
        end = max(end, acquired.end_offset)
        if not acquired.deliveries:
            continue
        left -= len(acquired.deliveries)
        first, last = acquired.deliveries[0].offset, acquired.deliveries[-1].offset
        if diskless:  # read off the loop by share_diskless.read_acquired
            out[(name, p)] = {"records": b"", "acquired_records": _ranges(acquired.deliveries), "span": (first, last)}
            continue
        records = read_batches(app, name, p, first, last + 1, WHOLE_RANGE, at_least_one=True)
        stats_of(app).fetched("kafka", name, len(records))
        out[(name, p)] = {"records": records, "acquired_records": _ranges(acquired.deliveries)}
    return out, end


def _top_error(code: int, message: str | None = None) -> dict:
    return {"error_code": code, "error_message": message, "responses": [], "node_endpoints": []}


@handler(apis.SHARE_FETCH)
async def share_fetch(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    state = kafka_state(app)
    shares = state.shares
    group, member, epoch = req.get("group_id"), req.get("member_id"), req["share_session_epoch"]
    if not group or not member:
        return _top_error(errors.INVALID_REQUEST, "ShareFetch needs a group id and a member id")
    parts, names = _resolved(app, req["topics"])
    wanted = [(name, p) for name, _, p, _ in parts if name is not None]
    code, session = shares.sessions.fetch(group, member, epoch, wanted, _forgotten(app, req["forgotten_topics_data"]))
    if code:
        return _top_error(code)
    if epoch == INITIAL and ctx.conn is not None and hasattr(ctx.conn, "on_close"):
        ctx.conn.on_close[("share", group, member)] = lambda: shares.connection_closed(group, member, session)
    readable = may_read(ctx)
    ack_codes, end = _acknowledge(app, shares, group, member, parts, readable)
    lock_ms = shares.lock_ms(group)
    fetched: dict = {}
    denied = {(name, p) for name, p in session.partitions if not readable(name)}
    refused: set = set()  # diskless partitions the object store failed for
    if epoch == FINAL:
        end = max(end, shares.release_member(group, member))
    else:
        max_records = min(max(req["max_records"], 1), MAX_RECORDS) if req["max_records"] > 0 else 500
        partitions = [tp for tp in session.partitions if tp not in denied]
        deadline = trio.current_time() + max(req["max_wait_ms"], 0) / 1000
        whole = req.get("share_acquire_mode", BATCH_OPTIMIZED) != RECORD_LIMIT
        while True:
            refused = await share_diskless.refresh(app, partitions)
            fetched, e = _acquire_all(app, shares, group, member, [tp for tp in partitions if tp not in refused],
                                      max_records, req["max_bytes"], whole)
            end = max(end, e)
            remaining = deadline - trio.current_time()
            if fetched or remaining <= 0 or not partitions or ack_codes:
                break
            # another gateway's produce to a diskless partition wakes nobody here: look again soon
            refresh_again = any(share_diskless.is_diskless_partition(app, t) for t, _p in partitions)
            await app.arrivals.wait_any(partitions, min(remaining, DISKLESS_POLL_S) if refresh_again else remaining)
        await share_diskless.read_acquired(app, {tp: f.pop("span") for tp, f in fetched.items() if "span" in f}, fetched)
    await app.durable(end)
    ids = {name: tid for tid, name in names.items() if name}
    by_topic: dict = {}
    acked = {(name, p) for name, tid, p, _ in parts if name is not None and (tid, p) in ack_codes}
    shown = set(fetched) | denied | acked | refused  # partitions of unknown ids (a deleted topic's) are answered below
    if epoch == INITIAL:
        shown |= set(session.partitions)
    for name, p in sorted(shown):
        tid = ids.get(name) or topics.topic_id(app, name)
        entry = {"partition_index": p, "error_code": errors.NONE, "acknowledge_error_code": ack_codes.get((tid, p), 0),
                 "current_leader": LEADER, "records": b"", "acquired_records": []}
        if (name, p) in denied:
            entry["error_code"] = TOPIC_DENIED
        elif not topics.has_partition(topics.existing(app, name), p):
            entry["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
        elif (name, p) in refused:
            entry["error_code"] = errors.KAFKA_STORAGE_ERROR
        entry.update(fetched.get((name, p), {}))
        by_topic.setdefault(tid, []).append(entry)
    for name, tid, p, _ in parts:
        if name is None:
            by_topic[tid] = by_topic.get(tid, []) + [{
                "partition_index": p, "error_code": errors.UNKNOWN_TOPIC_ID, "acknowledge_error_code":
                errors.UNKNOWN_TOPIC_ID if (tid, p) in ack_codes else 0, "current_leader": LEADER,
                "records": b"", "acquired_records": []}]
    return {"error_code": errors.NONE, "acquisition_lock_timeout_ms": lock_ms,
            "responses": [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()],
            "node_endpoints": []}


@handler(apis.SHARE_ACKNOWLEDGE)
async def share_acknowledge(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    shares = kafka_state(app).shares
    group, member, epoch = req.get("group_id"), req.get("member_id"), req["share_session_epoch"]
    if not group or not member:
        return _top_error(errors.INVALID_REQUEST, "ShareAcknowledge needs a group id and a member id")
    parts, _ = _resolved(app, req["topics"])
    code, _session = shares.sessions.fetch(group, member, epoch, [], [], may_open=False)
    if code:
        return _top_error(code)
    readable = may_read(ctx)
    ack_codes, end = _acknowledge(app, shares, group, member, parts, readable)
    if epoch == FINAL:
        end = max(end, shares.release_member(group, member))
    await app.durable(end)
    by_topic: dict = {}
    for name, tid, p, batches in parts:
        code = ack_codes.get((tid, p), errors.NONE) if name is not None else errors.UNKNOWN_TOPIC_ID
        code = TOPIC_DENIED if name is not None and not readable(name) else code
        by_topic.setdefault(tid, []).append({"partition_index": p, "error_code": code, "error_message": None,
                                             "current_leader": LEADER})
    return {"error_code": errors.NONE, "acquisition_lock_timeout_ms": shares.lock_ms(group),
            "responses": [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()],
            "node_endpoints": []}
