"""Produce, Fetch and ListOffsets of diskless topics (docs/diskless.md): batches go verbatim into the
WAL object; their offsets are the index's, patched into BaseOffset when served. Every object-store
call runs in a worker thread. An unreachable store answers KAFKA_STORAGE_ERROR (retriable)."""
from __future__ import annotations

import dataclasses
import logging
import time

import trio

import gateway.kafka.diskless_txn as diskless_txn
import gateway.kafka.diskless_txn_cluster as diskless_txn_cluster
import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import records
from codec.kafka.schema import DecodeError
from gateway.kafka.state import kafka_state
from gateway.rate_log import RateLimitedWarning
from semantics.diskless import is_diskless
from semantics.producer_state import DUPLICATE, FENCED, INVALID_TXN_STATE, OUT_OF_ORDER
from store.objstore.api import ObjectStoreError

# a failed diskless Fetch (every retry of every consumer fails alike): one line per 30 s
FETCH_FAILURES = RateLimitedWarning(logging.getLogger("rocketgate"), 30.0)

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def diskless_partitions(app, req) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a Fetch that name diskless topics."""
    if app.diskless is None:
        return []
    out = []
    for t in req["topics"]:
        if is_diskless(app.store.topics.get(t["topic"])):
            out += [(t["topic"], p["partition"]) for p in t["partitions"]]
    return out


def _error(index: int, code: int, message: str | None = None) -> dict:
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "error_message": message}


async def prepare_partition(app, topic: str, cfg, index: int, data, version: int = 12, txn_id: str | None = None):
    """Validate one partition's batches and join the WAL buffer with the new ones: a `_Joined` to
    `finish_partition`, or the partition's error answer (a dict). `txn_id`: the Produce's transactional id."""
    try:
        batches = records.parse_batches(data or b"")
    except DecodeError as exc:
        return _error(index, errors.CORRUPT_MESSAGE, str(exc))
    if not batches:
        return _error(index, errors.CORRUPT_MESSAGE, "no record batch")
    limit = topics.max_message_bytes(app, cfg)
    for b in batches:
        if b.size > limit:
            return _error(index, errors.MESSAGE_TOO_LARGE)
        problem = b.problem()
        if problem is not None:
            kind, why = problem
            return _error(index, errors.INVALID_RECORD if kind == "invalid" else errors.CORRUPT_MESSAGE, why)
    st = kafka_state(app)
    try:
        if any(_idempotent(b) for b in batches):
            await _producer_state(app, st, topic, index)
    except ObjectStoreError as exc:
        return _error(index, errors.KAFKA_STORAGE_ERROR, f"object store: {exc}")
    kept, producers, duplicate, delta, after, held = [], [], None, 0, None, []
    inflight = app.diskless.inflight
    for b in batches:
        if _idempotent(b):
            verdict, at, prior = inflight_verdict(inflight, b, topic, index)
            if verdict is None:
                verdict, at = st.producers.check(b.producer_id, b.producer_epoch, topic, index,
                                                 b.base_sequence, b.record_count)
            if verdict == DUPLICATE:  # a retry of a committed batch: its offset again, nothing written
                duplicate = at if duplicate is None else duplicate
                continue
            if verdict == IN_FLIGHT:  # a retry of a batch still in a WAL buffer: retried once it is in
                return _error(index, errors.REQUEST_TIMED_OUT, "the same batch is still being written")
            if verdict == OUT_OF_ORDER:
                return _error(index, errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
            if verdict == FENCED:
                return _error(index, errors.INVALID_PRODUCER_EPOCH)
        count = b.record_count  # (a transactional batch's placeholder has none: its sequences are b's)
        if b.attributes & records.TRANSACTIONAL and st.cluster_txns is not None:  # checked in etcd, staged
            code, where = await diskless_txn_cluster.admit(st.cluster_txns, txn_id, b, topic, index, version >= 12)
            if where is None:
                return _error(index, errors.TRANSACTION_ABORTABLE if code == INVALID_TXN_STATE and version >= 11
                              else code)
            try:
                await diskless_txn.stage_at(app, where, b, topic, index)
            except ObjectStoreError as exc:
                return _error(index, errors.KAFKA_STORAGE_ERROR, f"object store: {exc}")
            b = diskless_txn.placeholder(b)
        elif b.attributes & records.TRANSACTIONAL:  # held until EndTxn; a placeholder takes its offsets now
            code, txn = diskless_txn.admit(st, b, topic, index, version, int(time.time() * 1000))
            if txn is None:
                return _error(index, code)
            await st.diskless_txns.mark_open(txn)
            try:  # durable before the produce is answered: a commit finds it whatever happens here
                await st.diskless_txns.stage(txn, b, topic, index)
            except ObjectStoreError as exc:
                return _error(index, errors.KAFKA_STORAGE_ERROR, f"object store: {exc}")
            held.append((txn, b))
            b = diskless_txn.placeholder(b)
        if _idempotent(b):
            after = after or prior
            producers.append((b.producer_id, b.producer_epoch, b.base_sequence, count, delta))
        kept.append(b)
        delta += b.last_offset_delta + 1
    if not kept:
        return _Joined(index, None, duplicate)
    slot = app.diskless.writer.enqueue(topic, index, b"".join(b.data for b in kept), delta,
                                       max(b.max_timestamp for b in kept), tuple(producers), after,
                                       lambda slot: _done(app, st, slot, held))
    for pid, epoch, seq, count, _at in producers:
        inflight.setdefault((pid, topic, index), []).append((epoch, seq, _add(seq, count - 1), slot))
    return _Joined(index, slot, duplicate)


@dataclasses.dataclass
class _Joined:
    index: int
    slot: object  # semantics.diskless._Slot, None when every batch was a duplicate
    duplicate: int | None


IN_FLIGHT = "in_flight"


def _add(seq: int, n: int) -> int:
    return (seq + n) % (1 << 31)


def inflight_verdict(inflight: dict, b, topic: str, index: int):
    """(verdict, offset, predecessor slot) of an idempotent batch against its producer's batches
    still in WAL buffers (a pipelined connection's earlier produces); verdict None: none in flight,
    ask the producer table."""
    pending = inflight.get((b.producer_id, topic, index))
    if not pending:
        return None, None, None
    epoch, _first, last, slot = pending[-1]
    if b.producer_epoch != epoch:
        return None, None, None
    if any(p[1] == b.base_sequence for p in pending):
        return IN_FLIGHT, None, None
    if b.base_sequence == _add(last, 1):
        return "ok", None, slot
    return OUT_OF_ORDER, None, None


def _done(app, st, slot, held=()) -> None:
    """(in join order, when the slot's flush ended) record its idempotent batches, drop them from
    the in-flight table, hold its transactional batches for their commit, wake the queue's fetches."""
    inflight = app.diskless.inflight
    for txn, b in held if slot.error is None else ():
        st.diskless_txns.hold(txn, b, slot.topic, slot.queue)
    for pid, epoch, seq, count, at in slot.producers:
        if slot.error is None:
            st.producers.record(pid, epoch, slot.topic, slot.queue, seq, count, slot.base + at)
        key = (pid, slot.topic, slot.queue)
        kept = [p for p in inflight.get(key, ()) if p[3] is not slot]
        if kept:
            inflight[key] = kept
        else:
            inflight.pop(key, None)
    if slot.error is None:
        app.arrivals.notify(slot.topic, slot.queue)


async def finish_partition(app, topic: str, joined) -> dict:
    """The partition's answer once its slot's WAL object and index entry are in the store."""
    if isinstance(joined, dict):
        return joined
    base, index = joined.duplicate, joined.index
    if joined.slot is not None:
        try:
            first = await app.diskless.writer.result(joined.slot)
        except ObjectStoreError as exc:
            return _error(index, errors.KAFKA_STORAGE_ERROR, f"object store: {exc}")
        base = first if base is None else base
    return {"index": index, "error_code": errors.NONE, "base_offset": base, "log_append_time_ms": -1,
            "log_start_offset": app.diskless.index.start(topic, index)}


def _idempotent(b) -> bool:
    return b.producer_id >= 0 and b.base_sequence >= 0


async def _producer_state(app, st, topic: str, index: int) -> None:
    """Once per queue and process: the idempotent producers' state from the queue's index entries
    (after a restart or a wiped data dir, a retried batch is still recognised as a duplicate)."""
    seeded = app.diskless.producers_seeded
    if (topic, index) in seeded:
        return
    await trio.to_thread.run_sync(app.diskless.index.refresh, topic, index)
    if (topic, index) in seeded:  # another produce seeded it meanwhile
        return
    seeded.add((topic, index))
    for entry in app.diskless.index.entries(topic, index):
        for pid, epoch, seq, count, at in entry.producers:
            st.producers.record(pid, epoch, topic, index, seq, count, entry.base + at)


async def produce_partitions(app, writes: list, read_on=None, version: int = 12, txn_id: str | None = None) -> None:
    """Each (response, topic, config, index, records) joins the WAL buffer, in order; then `read_on()`
    (the connection may read its next request: the order of appends is settled) and the answers,
    filled in place, once the WAL objects are in."""
    joined = [(w[0], w[1], await prepare_partition(app, *w[1:], version, txn_id)) for w in writes]
    if read_on is not None:
        read_on()
    for response, topic, j in joined:
        response.update(await finish_partition(app, topic, j))


def _read(index, topic: str, partition: int, offset: int, max_bytes: int) -> tuple[int, bytes]:
    """(worker thread) The queue's end after a refresh, and its batches from `offset` on."""
    high = index.refresh(topic, partition)
    return high, (index.read(topic, partition, offset, max_bytes) if offset < high else b"")


async def prepare_fetch(app, req, keys: list[tuple[str, int]]) -> dict:
    """(topic, partition) -> (high watermark, records) or an error code, for the diskless partitions
    of a Fetch; read before the synchronous pass over the request uses them."""
    wanted = {(t["topic"], p["partition"]): p for t in req["topics"] for p in t["partitions"]}
    out = {}
    for topic, partition in keys:
        cfg = app.store.topics.get(topic)
        if not topics.has_partition(cfg, partition):
            continue
        p = wanted[(topic, partition)]
        try:
            out[(topic, partition)] = await trio.to_thread.run_sync(
                _read, app.diskless.index, topic, partition, p["fetch_offset"], p["partition_max_bytes"])
        except ObjectStoreError as exc:  # answered retriable; a consumer would just see nothing come
            FETCH_FAILURES.warn("diskless fetch of %s-%d at offset %d failed (object store: %s): answered "
                                "KAFKA_STORAGE_ERROR", topic, partition, p["fetch_offset"], exc)
            out[(topic, partition)] = errors.KAFKA_STORAGE_ERROR
    return out


def fetch_answer(app, topic: str, partition: int, offset: int, found) -> tuple[dict, int, bool]:
    """(partition response, record bytes, failed) of one diskless partition from `prepare_fetch`."""
    if isinstance(found, int):
        return ({"partition_index": partition, "error_code": found, "high_watermark": -1, "records": b""},
                0, True)
    high, data = found
    low = app.diskless.index.start(topic, partition)
    entry = {"partition_index": partition, "high_watermark": high, "last_stable_offset": high,
             "log_start_offset": low, "records": data}
    if offset < low or offset > high:
        entry.update(error_code=errors.OFFSET_OUT_OF_RANGE, records=b"")
        return entry, 0, True
    return entry, len(data), False


async def list_offset(app, topic: str, partition: int, ts: int) -> tuple[int, int]:
    """(offset, timestamp) for ListOffsets: earliest, latest, max-timestamp; by time: the first entry
    whose newest record is at or after `ts` (entry granularity), else the end."""
    index = app.diskless.index
    end = await trio.to_thread.run_sync(index.refresh, topic, partition)
    if ts == LATEST:
        return end, -1
    if ts == EARLIEST or ts == -4:
        return index.start(topic, partition), -1
    if ts == MAX_TIMESTAMP:
        return index.max_timestamp(topic, partition)
    if ts < 0:
        return -1, -1
    return index.offset_for_time(topic, partition, ts)


