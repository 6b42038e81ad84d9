"""Kafka transactions on diskless topics in a cluster (docs/diskless.md, "Transactions"): the
coordinator state is in etcd (gateway/cluster/txns.py); the batches are staged in the bucket
(`store.diskless.txn_staging`, under the transaction's producer id, epoch and etcd start time) before
the Produce is answered, so no gateway holds them. Whichever gateway completes a decided end reads
them from the bucket: a commit appends those whose placeholder is in the index through its own WAL
writer, then every end deletes them. A diskless partition has no halves on its leader, so its
leader changing (or dying) during the transaction neither aborts a commit nor blocks its delivery."""
from __future__ import annotations

import logging

import trio

import gateway.kafka.errors as errors
from codec.kafka import records
from codec.kafka.schema import DecodeError
from semantics.diskless import is_diskless
from semantics.producer_state import INVALID_TXN_STATE, UNKNOWN_PRODUCER_ID, ClusterUnavailable
from store.diskless import txn_staging
from store.diskless.index import applied_batches
from store.objstore.api import ObjectStoreError

log = logging.getLogger("rocketgate.cluster")


async def admit(cluster, txn_id: str | None, b: records.Batch, topic: str, queue: int,
                implicit_add: bool) -> tuple[int, str | None]:
    """(error, staging prefix) of a transactional batch for a diskless partition, checked against the
    transaction's state in etcd (Produce v12+ adds the partition, as on a plain topic)."""
    if not txn_id:
        return UNKNOWN_PRODUCER_ID, None
    tp = (topic, queue)
    try:
        code = (await cluster.add_partitions(txn_id, b.producer_id, b.producer_epoch, [tp],
                                             verify_only=not implicit_add))[tp]
        state = (await cluster.etcd_states.read(txn_id)).state
    except ClusterUnavailable:
        return errors.COORDINATOR_NOT_AVAILABLE, None
    if code == errors.TRANSACTION_ABORTABLE:
        code = INVALID_TXN_STATE
    if code != errors.NONE:
        return code, None
    if state is None or state["state"] != "Ongoing" or (state["pid"], state["epoch"]) != (b.producer_id, b.producer_epoch):
        return INVALID_TXN_STATE, None  # ended meanwhile
    return errors.NONE, txn_staging.prefix(txn_id, b.producer_id, b.producer_epoch, state["started"])


def in_bucket(app, tp) -> bool:
    """Is this partition diskless (its transactional batches are staged in the bucket, not halves)?"""
    return app.diskless is not None and is_diskless(app.store.topics.get(tp[0]))


def _placed_batches(app, where: str, pid: int, epoch: int) -> list[tuple[str, int, int, records.Batch]]:
    """(blocking) (topic, queue, sequence, batch) of the staged batches under `where` whose
    placeholder is in their queue's index and that no entry appends yet (an end applied before a
    crash cut it short, or by another gateway, left its staged copy)."""
    index = app.diskless.index
    placed: dict[tuple[str, int], tuple[set, set]] = {}
    out = []
    for topic, queue, seq, data in txn_staging.load(index.store, where):
        if (topic, queue) not in placed:
            index.refresh(topic, queue)
            entries = index.entries(topic, queue)
            placed[(topic, queue)] = ({tuple(p[:3]) for e in entries for p in e.producers}, applied_batches(entries))
        holds, applied = placed[(topic, queue)]
        if (pid, epoch, seq) not in holds or (pid, epoch, seq) in applied:
            continue  # its produce failed (never acknowledged), or it is appended already
        try:
            out.append((topic, queue, seq, records.parse_batches(data)[0]))
        except (DecodeError, IndexError):
            log.warning("staged batch %s%s/%d/%d unreadable: skipped", where, topic, queue, seq)
    return out


class BucketEnds:
    """Ends of transactions' diskless batches, by whichever gateway completes the end."""

    def __init__(self, app) -> None:
        self.app = app
        self._locks: dict[str, trio.Lock] = {}  # one completer per transaction in this process

    async def end(self, txn_id: str, state: dict, commit: bool) -> list:
        """Apply (commit) or drop a decided end's staged batches; the transaction's other partitions
        (those with halves, for `_deliver`). ClusterUnavailable when the store failed: retried."""
        partitions = [tuple(tp) for tp in state["partitions"]]
        others = [tp for tp in partitions if not in_bucket(self.app, tp)]
        if len(others) == len(partitions):
            return partitions
        pid, epoch = state["marker"]
        where = txn_staging.prefix(txn_id, pid, epoch, state["started"])
        lock = self._locks.setdefault(where, trio.Lock())
        async with lock:
            try:
                if commit:
                    await self._append(where, pid, epoch)
                await trio.to_thread.run_sync(txn_staging.discard, self.app.diskless.index.store, where)
            except ObjectStoreError as exc:
                raise ClusterUnavailable(f"object store: {exc}") from None
        self._locks.pop(where, None)
        return others

    async def _append(self, where: str, pid: int, epoch: int) -> None:
        batches = await trio.to_thread.run_sync(_placed_batches, self.app, where, pid, epoch)
        writer, arrivals = self.app.diskless.writer, self.app.arrivals
        slots = [(seq, writer.enqueue(topic, queue, b.data, b.last_offset_delta + 1, b.max_timestamp,
                                      applied=((pid, epoch, seq),)))
                 for topic, queue, seq, b in batches]
        failed = None
        for seq, slot in slots:  # each appended one goes: a retried end appends only the rest
            try:
                await writer.result(slot)
            except ObjectStoreError as exc:  # (AlreadyApplied: another gateway at once; the retry skips it)
                failed = exc
                continue
            arrivals.notify(slot.topic, slot.queue)
            await trio.to_thread.run_sync(self.app.diskless.index.store.delete,
                                          txn_staging.key(where, slot.topic, slot.queue, seq))
        if failed is not None:
            raise failed
