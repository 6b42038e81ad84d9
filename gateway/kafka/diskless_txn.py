"""Kafka transactions on diskless topics (docs/diskless.md, "Transactions"): the plain path's layout
without its half topic. A transactional batch for a diskless partition puts an empty placeholder
batch taking its offsets into the WAL (the gap a plain topic's half leaves; the produce answers its
offset, idempotence checks its sequences) and the batch itself is held with the transaction, in
memory; EndTxn commit appends the held batches through the WAL at the queues' ends (one WAL object,
answered once their index entries are in), abort drops them. Nothing uncommitted ever reaches the
index, so every isolation level sees committed records only and the last stable offset is the high
watermark, as on a plain topic.

A transaction holding diskless batches is marked open in a local config file before its first such
produce is answered; a gateway that restarts with it marked fences its producer (epoch bump), so its
EndTxn(commit) cannot answer "ok" for batches the restart lost (as the plain path does for halves)."""
from __future__ import annotations

import dataclasses
import time

import trio

from codec.kafka import records
from interop.inner_batch import NOT_INDEXED, with_gaps
import gateway.kafka.errors as errors
from semantics.producer_state import INVALID_TXN_STATE
from store.objstore.api import ObjectStoreError

OPEN_CONFIG = "kafkaDisklessOpenTxns"  # transactional.id -> [producer id, epoch] holding diskless batches
TIMEOUT_CHECK_S = 1.0  # how often transactions holding diskless batches are checked against their timeout


@dataclasses.dataclass
class Held:
    """One committed-to-be batch of a transaction: its queue and bytes, in produce order."""
    topic: str
    queue: int
    run: bytes
    count: int
    max_ts: int


class DisklessTxns:
    """The held batches of each transaction in progress, keyed by transactional.id, and the local
    record of which of them are open (for fencing after a restart)."""

    def __init__(self, app) -> None:
        self.app = app
        self.held: dict[str, tuple[tuple[int, int, int], list[Held]]] = {}
        self.open: dict[str, list[int]] = dict(app.store.read_config(OPEN_CONFIG, {}) or {})
        self._submission = 0

    def fence_left_open(self, txns) -> None:
        """(at start) A transaction that held diskless batches when the previous process stopped lost
        them: bump its producer's epoch (it is fenced and must abort), as for plain halves."""
        bumped = False
        for txn_id, (pid, epoch) in self.open.items():
            txn = txns.by_id.get(txn_id)
            if txn is not None and (txn.producer_id, txn.epoch) == (pid, epoch):
                txn.epoch += 1
                bumped = True
        if bumped:
            txns._persist()
        if self.open:
            self.open.clear()
            self._persist()

    def _persist(self) -> None:
        self._submission = self.app.config_writer.submit(OPEN_CONFIG, dict(self.open))

    async def mark_open(self, txn) -> None:
        """Before a produce that holds a batch of `txn` is answered: its mark is on disk."""
        if self.open.get(txn.txn_id) != [txn.producer_id, txn.epoch]:
            self.open[txn.txn_id] = [txn.producer_id, txn.epoch]
            self._persist()
        await self.app.config_writer.written(OPEN_CONFIG, self._submission)

    def unmark(self, txn_id: str) -> None:
        if self.open.pop(txn_id, None) is not None:
            self._persist()

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
        pieces.append(Held(topic, queue, b.data, b.last_offset_delta + 1, b.max_timestamp))
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
        one appended leaves the held list, so a retried EndTxn appends only what failed. False when
        the store failed some."""
        pieces = self.pieces(txn)
        if not pieces:
            return True
        writer = self.app.diskless.writer
        arrivals = self.app.arrivals

        def notify(slot) -> None:
            if slot.error is None:
                arrivals.notify(slot.topic, slot.queue)

        slots = [(p, writer.enqueue(p.topic, p.queue, p.run, p.count, p.max_ts, on_done=notify)) for p in pieces]
        failed = []
        for piece, slot in slots:
            try:
                await writer.result(slot)
            except ObjectStoreError:
                failed.append(piece)
        pieces[:] = failed
        return not failed


    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Background service: a transaction holding diskless batches has no half for the check-back
        service to find, so this aborts it once past its timeout (fencing its producer, as Kafka's
        coordinator does) and lets go of what it held."""
        task_status.started()
        while True:
            await trio.sleep(TIMEOUT_CHECK_S)
            if not self.held:
                continue
            txns = self.app.kafka.txns
            await txns.expire_due(int(time.time() * 1000))
            for txn_id, (key, _pieces) in list(self.held.items()):
                txn = txns.by_id.get(txn_id)
                if txn is None or key != self._key(txn):  # aborted (by a timeout, an InitProducerId) or ended
                    self.drop(txn_id)
                    self.unmark(txn_id)


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
