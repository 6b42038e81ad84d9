"""Fetch: stored entries served as record batches, waiting up to max_wait_ms for min_bytes.

An inner-batch entry is its RecordBatch with BaseOffset patched; a large one is sent from the
CommitLog file (sendfile), a medium one from the buffer its run was read into (a memoryview: the
socket gets it with sendmsg, no copy into the answer). Native RocketMQ messages and a filtered view's cut of a batch are
encoded by `interop.to_kafka`.
"""
from __future__ import annotations

import itertools
import operator
import struct

import trio

import gateway.kafka.diskless as diskless
import gateway.kafka.errors as errors
import gateway.kafka.fetch_sessions as fetch_sessions
import gateway.kafka.leader_epochs as leader_epochs
import gateway.kafka.leaders as leaders
import gateway.kafka.offsets_topic as offsets_topic
import gateway.kafka.quotas as quotas
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway import tier_reads
from codec.kafka.records import (BATCH_LENGTH_AT, LAST_OFFSET_DELTA_AT, LEADER_EPOCH_AT, RECORD_COUNT_AT,
                                 stored_batch_problem)
from codec.kafka.schema import DecodeError, Spliced
from codec.remoting import message as stored
from codec.remoting.message import (BODY_AT, BODY_CRC_AT, BODY_LENGTH_AT, INNER_BATCH_FLAG as INNER_BATCH, INT32 as _I32,
                                    INT64 as _I64, QUEUE_OFFSET_AT, SYSFLAG_AT)
from interop.txn_visibility import VISIBLE
from gateway.kafka.registry import RequestContext, handler
from gateway.ops.stats import stats_of
from gateway.sendfile import FileRange, close_spliced
from interop.damaged import DAMAGED
from interop.to_kafka import native_batch, view_batch
from semantics import views

UNITS_PER_LOOKUP = 4096  # ConsumeQueue units fetched per store call while filling a Fetch
PEEK_UNITS = 64  # the first look: when all of them share one entry, its end is found by binary search
_PHYS = operator.itemgetter(0)


def fetch_entries(s, topic: str, partition: int, offset: int, high: int, budget: int) -> list[tuple[int, int, int]]:
    """(first offset, phys, size) of the entries from `offset` on, until their stored sizes reach
    `budget` (the entry crossing it included: a stored entry is larger than the batch it serves).
    The units of one inner batch share their phys: a large batch is skipped by binary search,
    smaller ones are grouped with the per-unit work in C."""
    out = []
    total = 0
    lookup = PEEK_UNITS
    while offset < high and total < budget:
        units = s.units(topic, partition, offset, min(high - offset, lookup))
        if not units:
            break
        phys, size = units[0][0], units[0][1]
        if len(units) >= PEEK_UNITS and units[PEEK_UNITS - 1][0] == phys:  # one large batch
            if not (out and out[-1][1] == phys):
                out.append((offset, phys, size))
                total += size
            offset = s.entry_end(topic, partition, offset + PEEK_UNITS - 1, phys, high)
            lookup = PEEK_UNITS
            continue
        start = offset
        entries = 0
        for phys, run in itertools.groupby(units, _PHYS):
            entries += 1
            n = len(list(run))
            if not (out and out[-1][1] == phys):  # else the batch goes on from the previous lookup
                if total >= budget:
                    break
                size = units[offset - start][1]
                out.append((offset, phys, size))
                total += size
            offset += n
        # many small entries: look further at once; a few: the next may be large, peek first
        lookup = UNITS_PER_LOOKUP if entries > PEEK_UNITS // 8 else PEEK_UNITS
    return out


SPLICE_MIN_BYTES = 64 << 10  # a stored batch at least this large is sent from its file (sendfile)
# a smaller one, read with its run, is sent from the read buffer, not copied again (bench.fetch_copy:
# no gain below 16 KiB, 0.77x CPU per GB at 48 KiB)
SHARE_MIN_BYTES = 16 << 10
_SPLICE_HEAD = BODY_AT + RECORD_COUNT_AT + _I32.size  # an entry's bytes up to its batch's record count


def read_batches(app, topic: str, partition: int, offset: int, high: int, max_bytes: int, at_least_one: bool,
                 view=None, epoch_of=None):
    """Record batches from `offset` up to about `max_bytes` (one batch even if larger when asked):
    a bytearray, or a `Spliced` whose parts are bytearrays and `FileRange`s.

    A large inner-batch entry is not read at all: its RecordBatch is sent from the CommitLog file
    after the 8 bytes of its BaseOffset, which are patched in memory (the batch CRC does not cover
    them). Each contiguous run of smaller entries is read with one call; a batch of at least
    SHARE_MIN_BYTES is then a memoryview of that read (its BaseOffset sent as a separate piece),
    a smaller one is copied once into the answer, BaseOffset patched there. `view` is the tag filter of a filtered view topic: its
    inner-batch entries are cut to the matching records, renumbered with the view's offsets. With
    `epoch_of(offset)` (a replicated queue in a cluster) each verbatim batch's partitionLeaderEpoch is
    patched too (outside the CRC as well): the epoch that wrote it, which clients validate against."""
    out = bytearray()
    parts = []  # finished pieces before `out` when anything is spliced
    total = 0  # bytes in parts and out
    s = app.store
    entries = fetch_entries(s, topic, partition, offset, high, max(max_bytes, 1))
    i = 0
    while i < len(entries):
        first, phys, size = entries[i]
        if size >= SPLICE_MIN_BYTES and view is None and first >= offset:
            head = s.read_entry(phys, _SPLICE_HEAD)
            if s.is_quarantined(phys):
                offset = _skip(s, topic, partition, first, phys, high, "quarantined (corrupt)")
                i += 1
                continue
            if len(head) == _SPLICE_HEAD and _I32.unpack_from(head, SYSFLAG_AT)[0] & INNER_BATCH:
                qoff = _I64.unpack_from(head, QUEUE_OFFSET_AT)[0]
                blen = _I32.unpack_from(head, BODY_LENGTH_AT)[0]
                problem = _batch_problem(head, 0, size, blen)
                if problem is not None:
                    offset = _skip(s, topic, partition, first, phys, high, problem)
                    i += 1
                    continue
                if total + blen > max_bytes and (total or not at_least_one):
                    break
                kept = BATCH_LENGTH_AT if epoch_of is None else LEADER_EPOCH_AT + _I32.size  # patched before
                rng = s.open_entry_range(phys + BODY_AT + kept, blen - kept)
                if rng is not None:
                    out += _I64.pack(qoff)
                    if epoch_of is not None:
                        out += head[BODY_AT + BATCH_LENGTH_AT:BODY_AT + LEADER_EPOCH_AT] + _I32.pack(epoch_of(qoff))
                    parts += (out, FileRange(rng[0], rng[1], blen - kept))
                    out = bytearray()
                    total += blen
                    offset = qoff + _I32.unpack_from(head, BODY_AT + RECORD_COUNT_AT)[0]
                    i += 1
                    continue
        j = i + 1  # entries[i:j] is one contiguous run of the CommitLog, copied
        while (j < len(entries) and entries[j][1] == entries[j - 1][1] + entries[j - 1][2]
               and entries[j][2] < SPLICE_MIN_BYTES):
            j += 1
        run_start = entries[i][1]
        run_len = entries[j - 1][1] + entries[j - 1][2] - run_start
        run = s.read_entry(run_start, run_len)
        if len(run) < run_len:
            break
        mv = memoryview(run)
        full = False
        for first, phys, size in entries[i:j]:
            if first < offset:
                continue  # already served by the batch before (a view cut)
            if size < BODY_AT:
                offset = first + 1  # a hole in the ConsumeQueue: nothing to serve
                continue
            at = phys - run_start
            inner = _I32.unpack_from(run, at + SYSFLAG_AT)[0] & INNER_BATCH
            blen = _I32.unpack_from(run, at + BODY_LENGTH_AT)[0]
            problem = _batch_problem(run, at, size, blen) if inner else None
            if problem is None and not _body_crc_ok(s, mv, at, phys, blen, size):
                problem = "quarantined (corrupt)"
            if problem is not None:
                offset = _skip(s, topic, partition, first, phys, high, problem)
                continue
            if inner and view is None:
                qoff = _I64.unpack_from(run, at + QUEUE_OFFSET_AT)[0]
                nxt = qoff + _I32.unpack_from(run, at + BODY_AT + RECORD_COUNT_AT)[0]
                if total + blen > max_bytes and (total or not at_least_one):
                    full = True
                    break
                if blen >= SHARE_MIN_BYTES:  # not copied: its bytes in `run` are sent as they are
                    out += _I64.pack(qoff)
                    kept = BATCH_LENGTH_AT
                    if epoch_of is not None:
                        out += mv[at + BODY_AT + BATCH_LENGTH_AT:at + BODY_AT + LEADER_EPOCH_AT]
                        out += _I32.pack(epoch_of(qoff))
                        kept = LEADER_EPOCH_AT + _I32.size
                    parts += (out, mv[at + BODY_AT + kept:at + BODY_AT + blen])
                    out = bytearray()
                else:
                    pos = len(out)
                    out += mv[at + BODY_AT:at + BODY_AT + blen]
                    _I64.pack_into(out, pos, qoff)
                    if epoch_of is not None:
                        _I32.pack_into(out, pos + LEADER_EPOCH_AT, epoch_of(qoff))
                total += blen
            else:
                raw = bytes(mv[at:at + size])
                try:
                    if inner:
                        batch, nxt = _view_cut(s, topic, partition, first, phys, raw, view)
                    else:
                        batch, nxt = native_batch(stored.decode(raw), first), first + 1
                except (DecodeError, stored.MessageFormatError, struct.error, ValueError, IndexError) as exc:
                    offset = _skip(s, topic, partition, first, phys, high, f"cannot be served: {exc}")
                    continue
                if total + len(batch) > max_bytes and (total or not at_least_one):
                    full = True
                    break
                out += batch
                total += len(batch)
            offset = max(nxt, first + 1)
        mv.release()
        if full:
            break
        i = j
    if not parts:
        return out
    parts.append(out)
    return Spliced(parts, total)


def _batch_problem(buf, at: int, size: int, blen: int) -> str | None:
    """Why the inner-batch entry at `at` (`size` bytes, body `blen`) cannot be served verbatim."""
    if blen < 0 or BODY_AT + blen > size:
        return f"body length {blen} outside the entry ({size} bytes)"
    return stored_batch_problem(buf, at + BODY_AT, blen)


def _body_crc_ok(s, mv, at: int, phys: int, blen: int, size: int) -> bool:
    """The entry is not quarantined and, if stored before this process started (`s.trusted_from`:
    what a restart finds below the checkpoint), its body CRC matches. Measured: checking every
    entry halves this copy path (~480 -> ~225 MB/s, 10 KB batches), so the tail this process wrote
    itself (validated at Produce) is not checked again. A mismatch is confirmed by the store, which
    quarantines the entry."""
    if s.is_quarantined(phys):
        return False
    if phys >= s.trusted_from:
        return True
    if 0 <= blen <= size - BODY_AT and stored.body_crc(mv[at + BODY_AT:at + BODY_AT + blen]) == \
            _I32.unpack_from(mv, at + BODY_CRC_AT)[0]:
        return True
    return s.get(phys) is not None


def _skip(s, topic: str, partition: int, first: int, phys: int, high: int, why: str) -> int:
    """Skip a damaged entry (reported once); the offset after all its units."""
    DAMAGED.skip(phys, topic, partition, why)
    return s.entry_end(topic, partition, first, phys, high)


def _view_cut(s, view_topic: str, partition: int, offset: int, phys: int, raw: bytes, filt) -> tuple[bytes, int]:
    """(batch, next view offset) for a view unit that points at a Kafka record batch entry: the
    view holds one unit per matching record of the batch, contiguous; `offset` may be any of them."""
    run = s.units(view_topic, partition, offset, _I32.unpack_from(raw, BODY_AT + LAST_OFFSET_DELTA_AT)[0] + 1)
    n = 1
    while n < len(run) and run[n][0] == phys:
        n += 1
    return view_batch(raw, offset, n, filt), offset + n


def release(responses) -> None:
    """Close the files held by Spliced records of Fetch responses that will not be sent."""
    for t in responses:
        for p in t["partitions"]:
            if type(p.get("records")) is Spliced:
                close_spliced(p["records"])


@handler(apis.FETCH)
async def fetch(ctx: RequestContext):
    app, req = ctx.app, ctx.request
    session = fetch_sessions.plan(app, ctx.version, req)
    if session.error:
        return {"error_code": session.error, "session_id": 0, "responses": []}
    req = dict(req, topics=session.topics)  # a session's fetch reads all its partitions
    deadline = trio.current_time() + max(req["max_wait_ms"], 0) / 1000
    min_bytes = req["min_bytes"]
    max_bytes = quotas.fetch_max_bytes(ctx, req.get("max_bytes", 0x7FFFFFFF))
    min_bytes = min(min_bytes, max_bytes)
    keys = [(t["topic"], p["partition"]) for t in req["topics"] if t["topic"] is not None for p in t["partitions"]]
    diskless_keys = diskless.diskless_partitions(app, req)
    while True:
        found = await diskless.prepare_fetch(app, req, diskless_keys) if diskless_keys else {}
        (responses, total, failed), tier_misses = tier_reads.attempt(_fetch_once, app, req, max_bytes, found)
        remaining = deadline - trio.current_time()
        if tier_misses and total < min_bytes and not failed and remaining > 0:  # tier data on its way
            release(responses)
            await tier_reads.settle(tier_misses, deadline)
            continue
        if total >= min_bytes or failed or remaining <= 0 or not keys:
            throttle_ms = quotas.fetch_throttle_ms(ctx, total)
            if throttle_ms:  # over the consumer quota: an empty answer, as Kafka's
                release(responses)
                return {"responses": [], "session_id": 0, "throttle_time_ms": throttle_ms}
            stats_of(app).fetch_response(responses)
            answered, session_id = session.finish(responses)
            return leaders.with_leader_hints(ctx, {"responses": answered, "session_id": session_id},
                                             leaders.FETCH_LAYOUT)
        release(responses)
        await app.arrivals.wait_any(keys, remaining)


def _fetch_once(app, req, max_bytes: int, found: dict):
    """(responses, bytes of records, whether a partition failed) for one look at the store; `found`:
    what `diskless.prepare_fetch` read of the diskless partitions."""
    responses = []
    total = 0
    failed = False
    committed = req.get("isolation_level", 0) == 1  # read_committed: up to the last stable offset
    for t in req["topics"]:
        name = t["topic"]
        if name is None:
            responses.append({"topic": None, "topic_id": t["topic_id"], "partitions": [
                {"partition_index": p["partition"], "error_code": errors.UNKNOWN_TOPIC_ID, "high_watermark": -1,
                 "records": b""} for p in t["partitions"]]})
            failed = True
            continue
        cfg = offsets_topic.readable(app, name)
        parts = []
        for p in t["partitions"]:
            index = p["partition"]
            if not topics.has_partition(cfg, index) or not app.ownership.owns(name, index):
                code = (errors.NOT_LEADER_OR_FOLLOWER if topics.has_partition(cfg, index)
                        else errors.UNKNOWN_TOPIC_OR_PARTITION)
                parts.append({"partition_index": index, "error_code": code, "high_watermark": -1, "records": b""})
                failed = True
                continue
            if (name, index) in found:
                entry, size, bad = diskless.fetch_answer(app, name, index, p["fetch_offset"], found[(name, index)])
                parts.append(entry)
                total += size
                failed = failed or bad
                continue
            low, log_end = app.store.min_offset(name, index), app.store.max_offset(name, index)
            high = app.replication.readable_end(name, index, log_end)
            offset = p["fetch_offset"]
            stable = VISIBLE.stable_end(name, index, high, low)  # Kafka's last stable offset
            entry = {"partition_index": index, "high_watermark": high, "last_stable_offset": stable,
                     "log_start_offset": low, "records": b""}
            end = stable if committed else high
            if committed:  # the client drops these producers' records from each first offset on
                entry["aborted_transactions"] = [{"producer_id": pid, "first_offset": first}
                                                 for pid, first in VISIBLE.aborted_in(name, index, offset, end)]
            # above the high watermark but not the log end: nothing yet, as Kafka (a new leader's high
            # watermark may lag what its predecessor let consumers read; out of range, librdkafka
            # reset them to the earliest offset: docs/faults.md, fourth stop)
            if offset < low or offset > max(high, log_end):
                entry["error_code"] = errors.OFFSET_OUT_OF_RANGE
                failed = True
            elif offset < end and total < max_bytes:
                limit = min(p["partition_max_bytes"], max_bytes - total)
                entry["records"] = read_batches(app, name, index, offset, end, limit, at_least_one=total == 0,
                                                view=views.view_filter(cfg),
                                                epoch_of=leader_epochs.batch_epochs(app, name, index))
                total += len(entry["records"])
            parts.append(entry)
        responses.append({"topic": name, "topic_id": t.get("topic_id"), "partitions": parts})
    return responses, total, failed
