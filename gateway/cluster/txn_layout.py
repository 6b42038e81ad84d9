"""Kafka's transaction layout in a cluster (`--cluster-txn-layout kafka`; docs/cluster-txn-layout.md).

A transactional batch goes into its partition at produce time, as on one gateway, and is replicated
with it. Every replica derives the queue's open transactions and aborted index from the entries
appended to it (`interop.txn_visibility.VISIBLE.appended`: the leader from its produce path and its
marker writes, a follower from each fetched entry; a truncation undoes what it cut), so a promoted
follower already knows them. The end's marker is appended by the partition's *current* leader and
acknowledged once its in-sync replicas hold it (Kafka's WriteTxnMarkers, acks=all); a marker for a
producer with no open transaction there gets one only when it is a partition of the transaction that
got no record (Kafka marks every partition of a transaction), once per end.
"""
from __future__ import annotations

import logging
import time

import trio

from codec.kafka import records
from gateway.cluster import txn_fence, txn_snapshots
from interop.inner_batch import NOT_INDEXED, entry_message
from interop.txn_visibility import VISIBLE
from semantics.flow_control import run_in_turn
from semantics.replication.contract import NotLeader

log = logging.getLogger("rocketgate.cluster")


def enabled(app) -> bool:
    return getattr(app.config, "cluster_txn_layout", "halves") == "kafka"


def install(app) -> txn_snapshots.Snapshots:
    """Every replica derives the state from what it appends; at start, from each queue's snapshot and
    the log after it (the whole log where there is no snapshot to trust). The snapshots, for `keep`."""
    snapshots = txn_snapshots.Snapshots(app.store, app.config.cluster_txn_snapshot_s)
    app.replication.derive = txn_snapshots.Derived(VISIBLE, snapshots)
    deleted = app.store.topics.on_deleted

    def forget(topic: str) -> None:  # a topic created again under the name starts with nothing open
        VISIBLE.forget_topic(topic)
        snapshots.drop_topic(topic)
        if deleted is not None:
            deleted(topic)
    app.store.topics.on_deleted = forget
    began = time.monotonic()
    queues, replayed = replay(app.store, snapshots)
    log.info("cluster: Kafka transaction state of %d queues restored (%d from snapshots, %d entries replayed) "
             "in %.2f s", queues, len(snapshots.taken), replayed, time.monotonic() - began)
    return snapshots


def replay(store, snapshots: txn_snapshots.Snapshots | None = None) -> tuple[int, int]:
    """Derive every replicated queue's transaction state from its snapshot (if one is valid) and the
    entries after it, else from its whole log (a restart). (How many queues, how many entries read.)"""
    keys = txn_snapshots.replicated_queues(store)
    replayed = 0
    for topic, qid in keys:
        VISIBLE.forget_queue(topic, qid)
        start = (snapshots.load(topic, qid) if snapshots is not None else None) or 0
        for offset, m in store.iterate(topic, qid, start):
            VISIBLE.appended(topic, qid, offset, m)
            replayed += 1
    return len(keys), replayed


def _leads(app, node, topic: str, qid: int) -> bool:
    return node.owns(topic, qid) and not app.replication.write_refusal(topic, qid)


async def write_markers(app, node, pid: int, epoch: int, commit: bool, partitions,
                        coordinator_epoch: int | None = None) -> None:
    """The end of producer `pid`'s transaction of `epoch` on each of `partitions`, which this gateway must
    lead (else NotLeader: the coordinator sends it to the current leader): its marker appended where
    that transaction is open, then every in-sync replica holding the queue up to its end.
    `coordinator_epoch`: the end's number for its transactional id (`txn_fence`; None: an end decided
    before ends were numbered), kept in the marker's value as Kafka keeps its coordinator's epoch."""
    for topic, qid in sorted({tuple(tp) for tp in partitions}):
        cfg = app.store.topics.get(topic)
        if cfg is None or not 0 <= qid < max(cfg.read_queues, cfg.write_queues):
            continue  # deleted meanwhile: its records went with it
        if not _leads(app, node, topic, qid):
            raise NotLeader(f"{topic}/{qid}: not the leader here")
        async with _lock(topic, qid):  # one check-and-append at a time: a racing retry appends nothing
            if _marker_due(app.store, topic, qid, pid, epoch, coordinator_epoch):
                now = int(time.time() * 1000)
                control = records.control_batch(commit, pid, epoch, now, coordinator_epoch or 0)
                marker = records.parse_batches(control)[0]
                msg = entry_message(topic, qid, marker, NOT_INDEXED, {}, now, False)
                [result] = await run_in_turn(app.flow, app.store, app.store.append_many, [msg])
                VISIBLE.appended(topic, qid, result.queue_offset, msg)
                _MARKED.setdefault((topic, qid), {})[pid] = (epoch, time.monotonic())
                await app.durable(result.end_offset)
        await app.replicated(topic, qid, app.store.max_offset(topic, qid))


_LOCKS: dict[tuple[str, int], trio.Lock] = {}
# queue -> {producer id: (epoch, monotonic time) of the last marker this gateway appended there}: a
# retried end of a partition that got no record finds no open transaction, and must not append a
# second marker (bounded by `forget_old_marks`)
_MARKED: dict[tuple[str, int], dict[int, tuple[int, float]]] = {}
MARK_KEPT_S = 900.0  # Kafka's transaction.max.timeout.ms (15 min): far longer than an end's retries


def forget_old_marks(now: float | None = None) -> int:
    """Bound `_MARKED`: a producer's entry goes
    - when a transaction of that producer is open on the queue: an end finds it open and `_open_in`
      decides, never `_MARKED` (a retried end of an older epoch ends not the newer transaction), and
      that transaction's own marker writes the entry again;
    - when it is older than MARK_KEPT_S: the entry only guards against a coordinator's retries of the
      end it answered (they follow at once; the entry was never kept across a restart or a leader
      change either), and what a later copy can do is append one more marker for a producer with no
      open transaction there, which derives nothing (no reader's view changes), as a retried Kafka
      WriteTxnMarkers may also append one.
    How many entries went."""
    now = time.monotonic() if now is None else now
    gone = 0
    for queue, by_pid in list(_MARKED.items()):
        for pid in [p for p, (_e, at) in by_pid.items() if now - at > MARK_KEPT_S or VISIBLE.is_open(*queue, p)]:
            del by_pid[pid]
            gone += 1
        if not by_pid:
            del _MARKED[queue]
    return gone


def _lock(topic: str, qid: int) -> trio.Lock:
    return _LOCKS.setdefault((topic, qid), trio.Lock())


def _marker_due(store, topic: str, qid: int, pid: int, epoch: int, coordinator_epoch: int | None) -> bool:
    """Does the end of `pid`'s transaction of `epoch` append a marker on the queue? Never when the queue
    holds a marker of `pid` of this end or a later one (`txn_fence.fenced`: a retried copy, or an old
    coordinator's after the producer's next transaction began, which v1 cannot tell by the epoch).
    Else where that transaction is open; where none of `pid` is open (a partition added without a
    record) when the end is numbered, or, for an end without a number, unless this gateway already
    marked the queue for `pid` at this epoch or a later one."""
    if txn_fence.fenced(VISIBLE.last_mark(topic, qid, pid), coordinator_epoch):
        log.info("cluster: marker of producer %d for %s/%d refused: coordinator epoch %s, the queue has %s",
                 pid, topic, qid, coordinator_epoch, VISIBLE.last_mark(topic, qid, pid))
        return False
    if VISIBLE.is_open(topic, qid, pid):
        return _open_in(store, topic, qid, pid, epoch)
    if coordinator_epoch is not None:
        return True
    return _MARKED.get((topic, qid), {}).get(pid, (-1, 0.0))[0] < epoch


def _open_in(store, topic: str, qid: int, pid: int, epoch: int) -> bool:
    """Is a transaction of `pid` open on the queue that an end of `epoch` ends? Not one a later epoch
    opened (a stale end arriving after the producer's next transaction began, as Kafka's leader
    refuses a marker older than the producer's epoch)."""
    first = VISIBLE.open.get((topic, qid), {}).get(pid)
    if first is None:
        return False
    entries = store.read(topic, qid, first, 1).entries
    body = entries[0][1].body if entries else b""
    if len(body) < records.HEADER_SIZE:
        return True
    return records.PRODUCER_FIELDS.unpack_from(body, records.PRODUCER_ID_AT)[1] <= epoch
