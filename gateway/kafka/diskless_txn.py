"""Kafka transactions on diskless topics (docs/diskless.md, "Transactions"): the plain path's layout
without its half topic. A transactional batch for a diskless partition is staged in the bucket
(`store.diskless.txn_staging`) and an empty placeholder batch taking its offsets goes into the WAL
(the gap a plain topic's half leaves; the produce answers its offset, idempotence checks its
sequences); the batch is also held with the transaction, in memory. EndTxn commit appends the held
batches through the WAL at the queues' ends (one WAL object, answered once their index entries are
in) and deletes the staged copies; abort drops them (the staged copies are deleted in the background).
Nothing uncommitted ever reaches the index, so every isolation level sees committed records only
and the last stable offset is the high watermark, as on a plain topic.

A transaction holding diskless batches is marked open in a local config file before its first such
produce is answered; a gateway that restarts with it marked (kill -9) takes the transaction up
again from its staged batches (those whose placeholder is in the index), so its EndTxn commits
them; if they cannot be read, it fences the producer (epoch bump), as the plain path does for halves."""
from __future__ import annotations

import dataclasses
import logging
import time

import trio

from codec.kafka import records
from codec.kafka.schema import DecodeError
from interop.inner_batch import NOT_INDEXED, with_gaps
import gateway.kafka.errors as errors
from semantics.producer_state import INVALID_TXN_STATE
from gateway.kafka.diskless_txn_cluster import BucketEnds, in_bucket
from store.diskless import txn_staging
from store.diskless.index import applied_batches
from store.objstore.api import ObjectStoreError

log = logging.getLogger("rocketgate")

OPEN_CONFIG = "kafkaDisklessOpenTxns"  # transactional.id -> [producer id, epoch, start ms, offsets] holding diskless batches
TIMEOUT_CHECK_S = 1.0  # how often transactions holding diskless batches are checked against their timeout


@dataclasses.dataclass
class Held:
    """One committed-to-be batch of a transaction: its queue and bytes, in produce order."""
    topic: str
    queue: int
    run: bytes
    count: int
    max_ts: int
    ident: tuple = ()  # (producer id, epoch, first sequence): its commit's entry names it (never appended twice)
    tried: bool = False  # a commit of it failed: the retry first looks whether it was appended after all


class DisklessTxns:
    """The held batches of each transaction in progress, keyed by transactional.id, and the local
    record of which of them are open (to take them up again after a restart)."""

    def __init__(self, app) -> None:
        self.app = app
        self.held: dict[str, tuple[tuple[int, int, int], list[Held]]] = {}
        # transactional id -> [producer id, epoch, start ms] of a transaction holding diskless batches
        self.open: dict[str, list[int]] = dict(app.store.read_config(OPEN_CONFIG, {}) or {})
        self.discarding: set[str] = set()  # staging prefixes of ended transactions, deleted by `run`
        # marked transactions that may have staged batches (not those of offsets only: nothing to delete)
        self.staging: set[str] = set(self.open)
        self.bucket_ends = BucketEnds(app)  # in a cluster: ends applied from the bucket by any gateway
        self._submission = 0

    def in_bucket(self, tp) -> bool:
        """Is partition `tp` diskless: its transactional batches staged in the bucket, no halves?"""
        return in_bucket(self.app, tp)

    def resume_left_open(self, txns) -> None:
        """(at start, blocking) A transaction that held diskless batches when the previous process
        stopped is taken up again from its staged batches: its EndTxn commits them. One whose staged
        batches cannot be read (or an old mark) is fenced instead (epoch bump: it must abort)."""
        bumped = False
        for txn_id, mark in list(self.open.items()):
            txn = txns.by_id.get(txn_id)
            if txn is None or (txn.producer_id, txn.epoch) != tuple(mark[:2]):
                self.open.pop(txn_id)  # ended, or fenced since (its staged batches: discarded below)
                if _where(txn_id, mark) is not None:
                    self.discarding.add(_where(txn_id, mark))
                continue
            pieces = self._staged(txn_id, mark) if _where(txn_id, mark) is not None else None
            if pieces is None:
                txn.epoch += 1
                bumped = True
                self.open.pop(txn_id)
                continue
            txn.started_ms = txn.last_start_ms = mark[2]
            txn.state = "Ongoing"
            txn.partitions.update((p.topic, p.queue) for p in pieces)
            txn.offsets = [tuple(o) for o in (mark[3] if len(mark) > 3 else ())]
            self.held[txn_id] = (self._key(txn), pieces)
        if bumped:
            txns._persist()
        self._persist()

    def _staged(self, txn_id: str, mark: list[int]) -> list[Held] | None:
        """(blocking) The staged batches of a transaction whose placeholder is in the index (a staged
        batch whose placeholder never got in was answered with an error); None if the store failed."""
        diskless = self.app.diskless
        if diskless is None:
            return None
        pid, epoch = mark[:2]
        try:
            staged = txn_staging.load(diskless.index.store, _where(txn_id, mark))
            placed, applied = {}, set()
            for topic, queue, _seq, _data in staged:
                if (topic, queue) not in placed and self.app.store.topics.get(topic) is not None:
                    diskless.index.refresh(topic, queue)
                    entries = diskless.index.entries(topic, queue)
                    placed[(topic, queue)] = {(p[0], p[1], p[2]) for e in entries for p in e.producers}
                    applied |= applied_batches(entries)
        except (ObjectStoreError, OSError, ValueError) as exc:
            log.warning("diskless transaction %s not taken up (%s): its producer is fenced", txn_id, exc)
            return None
        pieces = []
        for topic, queue, seq, data in staged:
            if (pid, epoch, seq) not in placed.get((topic, queue), ()) or (pid, epoch, seq) in applied:
                continue  # its produce failed (never acknowledged), or a commit cut short appended it
            try:
                b = records.parse_batches(data)[0]
            except (DecodeError, IndexError):
                continue
            pieces.append(Held(topic, queue, b.data, b.last_offset_delta + 1, b.max_timestamp, (pid, epoch, seq)))
        return pieces

    def _persist(self) -> None:
        self._submission = self.app.config_writer.submit(OPEN_CONFIG, dict(self.open))

    async def mark_open(self, txn) -> None:
        """Before a produce that holds a batch of `txn` is answered: its mark is on disk, with the
        transaction's TxnOffsetCommit offsets (kept in step from now on: `offsets_added`)."""
        mark = [txn.producer_id, txn.epoch, txn.started_ms]
        if (self.open.get(txn.txn_id) or [])[:3] != mark:
            self.open[txn.txn_id] = [*mark, [list(o) for o in txn.offsets]]
            self._persist()
        await self.app.config_writer.written(OPEN_CONFIG, self._submission)

    async def offsets_added(self, txn) -> None:
        """(TxnOffsetCommit, before it is answered; a gateway with diskless topics) the transaction's
        offsets in its mark on disk, so a kill -9 before its first diskless produce (or with none:
        offsets only) loses none: the restarted gateway takes the transaction up with them. A
        transaction that also left plain halves open is fenced at start instead (producer_state)."""
        self.open[txn.txn_id] = [txn.producer_id, txn.epoch, txn.started_ms, [list(o) for o in txn.offsets]]
        self._persist()
        await self.app.config_writer.written(OPEN_CONFIG, self._submission)

    async def stage(self, txn, b: records.Batch, topic: str, queue: int) -> None:
        """Before the placeholder of `b` is written: `b` in the bucket, under its first sequence (a
        retry PUTs the same object again). Raises ObjectStoreError."""
        self.staging.add(txn.txn_id)
        await stage_at(self.app, txn_staging.prefix(txn.txn_id, txn.producer_id, txn.epoch, txn.started_ms),
                       b, topic, queue)

    def unmark(self, txn_id: str) -> None:
        mark = self.open.pop(txn_id, None)
        if mark is not None:
            if _where(txn_id, mark) is not None and txn_id in self.staging:
                self.discarding.add(_where(txn_id, mark))
            self._persist()
        self.staging.discard(txn_id)

    @staticmethod
    def _key(txn) -> tuple[int, int, int]:
        """Which transaction: a held batch of an earlier one (aborted by a timeout or an
        InitProducerId, which bump the epoch; or ended) is never committed with a later one."""
        return txn.producer_id, txn.epoch, txn.started_ms

    def hold(self, txn, b: records.Batch, topic: str, queue: int) -> None:
        """(once its placeholder is in the index) Keep `b` for the commit of `txn` if still open."""
        if txn.started_ms is None or (b.producer_id, b.producer_epoch) != (txn.producer_id, txn.epoch):
            return
        key, pieces = self.held.get(txn.txn_id, (None, []))
        if key != self._key(txn):
            pieces = []
        pieces.append(Held(topic, queue, b.data, b.last_offset_delta + 1, b.max_timestamp,
                           (b.producer_id, b.producer_epoch, b.base_sequence)))
        self.held[txn.txn_id] = (self._key(txn), pieces)

    def pieces(self, txn) -> list[Held]:
        """The held batches of `txn`'s transaction in progress (older leftovers are dropped)."""
        key, pieces = self.held.get(txn.txn_id, (None, []))
        if key != self._key(txn):
            self.held.pop(txn.txn_id, None)
            return []
        return pieces

    def drop(self, txn_id: str) -> None:
        self.held.pop(txn_id, None)

    async def commit(self, txn) -> bool:
        """Append the held batches of `txn` through the WAL, in produce order (one WAL object); each
        one appended leaves the held list, so a retried EndTxn appends only what failed (and what
        failed is looked up in the index first: its entry may have been written all the same); then
        delete the staged copies (before the end is answered: a restart must not take the transaction
        up again; one that does skips what an entry appends already). False when the store failed some."""
        pieces = self.pieces(txn)
        writer = self.app.diskless.writer if self.app.diskless is not None else None
        arrivals = self.app.arrivals

        def notify(slot) -> None:
            if slot.error is None:
                arrivals.notify(slot.topic, slot.queue)

        if any(p.tried for p in pieces):
            try:
                pieces[:] = await trio.to_thread.run_sync(self._not_applied, pieces)
            except ObjectStoreError:
                return False
        slots = [(p, writer.enqueue(p.topic, p.queue, p.run, p.count, p.max_ts, on_done=notify,
                                    applied=(p.ident,) if p.ident else ())) for p in pieces]
        failed = []
        for piece, slot in slots:
            try:
                await writer.result(slot)
            except ObjectStoreError:
                piece.tried = True
                failed.append(piece)
        pieces[:] = failed
        mark = self.open.get(txn.txn_id)
        if failed or writer is None or mark is None or _where(txn.txn_id, mark) is None:
            return not failed
        try:
            await trio.to_thread.run_sync(txn_staging.discard, self.app.diskless.index.store,
                                          _where(txn.txn_id, mark))
        except ObjectStoreError:
            return False
        return True

    def _not_applied(self, pieces: list[Held]) -> list[Held]:
        """(blocking) Those of `pieces` no entry of their queue appends yet."""
        index, applied = self.app.diskless.index, set()
        for topic, queue in {(p.topic, p.queue) for p in pieces}:
            index.refresh(topic, queue)
            applied |= applied_batches(index.entries(topic, queue))
        return [p for p in pieces if p.ident not in applied]

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Background service: a transaction holding diskless batches has no half for the check-back
        service to find, so this aborts it once past its timeout (fencing its producer, as Kafka's
        coordinator does) and lets go of what it held; and it deletes ended transactions' staged
        batches (a failed delete is tried again at the next round)."""
        task_status.started()
        while True:
            await trio.sleep(TIMEOUT_CHECK_S)
            await self._discard_ended()
            if not self.held:
                continue
            txns = self.app.kafka.txns
            await txns.expire_due(int(time.time() * 1000))
            for txn_id, (key, _pieces) in list(self.held.items()):
                txn = txns.by_id.get(txn_id)
                if txn is None or key != self._key(txn):  # aborted (by a timeout, an InitProducerId) or ended
                    self.drop(txn_id)
                    self.unmark(txn_id)

    async def _discard_ended(self) -> None:
        if self.app.diskless is None:
            self.discarding.clear()
        for where in list(self.discarding):
            try:
                await trio.to_thread.run_sync(txn_staging.discard, self.app.diskless.index.store, where)
            except ObjectStoreError as exc:
                log.info("staged batches %s not deleted yet (object store: %s)", where, exc)
                return
            self.discarding.discard(where)


def _where(txn_id: str, mark: list) -> str | None:
    """The staging prefix of an open mark (None: a mark of an older version, no start time)."""
    return txn_staging.prefix(txn_id, *mark[:3]) if len(mark) >= 3 else None


async def stage_at(app, where: str, b: records.Batch, topic: str, queue: int) -> None:
    """PUT `b` under the staging prefix `where`, named by its first sequence. Raises ObjectStoreError."""
    await trio.to_thread.run_sync(txn_staging.stage, app.diskless.index.store, where, topic, queue,
                                  b.base_sequence, b.data)


def placeholder(b: records.Batch) -> records.Batch:
    """The empty batch that takes a transactional batch's offsets in its partition at produce time
    (no record: the batch is held until the commit), with its producer id, epoch and sequences."""
    return with_gaps(b, NOT_INDEXED, set())[0]


def admit(st, b: records.Batch, topic: str, queue: int, version: int, now_ms: int):
    """(error code, txn) of a transactional batch for a diskless partition, as the plain path checks it."""
    code, txn = st.txns.for_batch(b.producer_id, b.producer_epoch, now_ms, (topic, queue), version >= 12)
    if txn is None and code == INVALID_TXN_STATE and version >= 11:  # not added: the client aborts (Kafka 4.3)
        code = errors.TRANSACTION_ABORTABLE
    return code, txn
