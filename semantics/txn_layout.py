"""Kafka's transaction layout over the half/op machinery (docs/mapping.md, "Transactions"). A Kafka
transactional batch goes into its partition at produce time; the first batch of a (transaction,
partition) also writes a small **half record** (no body) to the half topic naming the partition, the
producer and the first offset, so the check service and restart recovery treat it as any half.
Ending that half (`semantics.transactions`) appends a **marker** (control batch) to the partition in
the same write as the op message; an abort's op message also carries the aborted-index entry
(queue, producer id, first offset, marker offset), so the index (`interop.txn_visibility.VISIBLE`,
cached in `config/kafkaAbortedTxns.json`) is rebuilt from the op log whatever the cache missed.
"""
from __future__ import annotations

import logging

from codec.kafka import records
from codec.remoting.message import Message, StoredMessage
from interop.inner_batch import NOT_INDEXED, entry_message
from interop.txn_visibility import VISIBLE
from semantics.diskless import is_diskless
from semantics.routing import (HALF_TOPIC, OP_TOPIC, PROPERTY_KAFKA_TXN_FIRST, PROPERTY_KAFKA_TXN_PRODUCER,
                               PROPERTY_PRODUCER_GROUP, PROPERTY_REAL_QID, PROPERTY_REAL_TOPIC,
                               PROPERTY_TRANSACTION)

log = logging.getLogger("rocketgate.transactions")

CACHE_FILE = "kafkaAbortedTxns.json"
PROPERTY_FIRST = PROPERTY_KAFKA_TXN_FIRST  # on a half record: the transaction's first offset in its partition
PROPERTY_PRODUCER = PROPERTY_KAFKA_TXN_PRODUCER  # "<producer id>,<epoch>"
PROPERTY_ABORTED = "KAFKA_TXN_ABORTED"  # on an abort's op message: "<topic>,<queue>,<producer id>,<first>,<marker>"
IMMUNITY = "CHECK_IMMUNITY_TIME_IN_SECONDS"


def half_record(topic: str, qid: int, producer_id: int, epoch: int, first: int, txn_id: str,
                timeout_ms: int) -> Message:
    """The half record of a (transaction, partition) whose first batch is at `first`."""
    return Message(HALF_TOPIC, 0, b"", properties={
        PROPERTY_TRANSACTION: "true", PROPERTY_PRODUCER_GROUP: txn_id, IMMUNITY: str(-(-timeout_ms // 1000)),
        PROPERTY_REAL_TOPIC: topic, PROPERTY_REAL_QID: str(qid), PROPERTY_FIRST: str(first),
        PROPERTY_PRODUCER: f"{producer_id},{epoch}"})


def _fields(half: StoredMessage) -> tuple[str, int, int, int, int] | None:
    """(topic, queue, producer id, epoch, first offset) of a half record; None for any other half."""
    props = half.properties
    try:
        pid, epoch = (int(x) for x in props[PROPERTY_PRODUCER].split(","))
        return props[PROPERTY_REAL_TOPIC], int(props[PROPERTY_REAL_QID]), pid, epoch, int(props[PROPERTY_FIRST])
    except (KeyError, ValueError):
        return None


def op_log(store, start: int):
    """The op messages from op-queue offset `start` on."""
    off, end = max(start, store.min_offset(OP_TOPIC, 0)), store.max_offset(OP_TOPIC, 0)
    while off < end:
        res = store.read(OP_TOPIC, 0, off, 256)
        for _qoff, op in res.entries:
            yield op
        if res.next_offset <= off:
            break
        off = res.next_offset


class TxnLayout:
    def __init__(self, store, save) -> None:
        self.store = store
        self._save = save  # (file name, document): the off-loop config writer
        VISIBLE.reset()
        doc = store.read_config(CACHE_FILE, {}) or {}
        for topic, qid, pid, first, marker in doc.get("aborted") or []:
            VISIBLE.add_aborted(topic, int(qid), int(pid), int(first), int(marker))
        self._replay_op_log(int(doc.get("opScanned") or 0))

    def _replay_op_log(self, start: int) -> None:
        for op in op_log(self.store, start):
            self._add_aborted(op, op.properties.get(PROPERTY_ABORTED))
        if not self.trim() and self.store.max_offset(OP_TOPIC, 0) > start:
            self.persist()

    def trim(self) -> int:
        """Drop the aborted-index entries wholly below their queue's log start (retention, DeleteRecords
        moved it past their marker); persisted when any went. How many went."""
        dropped = sum(VISIBLE.trim(topic, qid, self.store.min_offset(topic, qid))
                      for topic, qid in list(VISIBLE.aborted))
        if dropped:
            self.persist()
        return dropped

    def _add_aborted(self, op, entry: str | None) -> None:
        """Add an abort's entry, if the half record its op message names is that transaction's."""
        if entry:
            try:
                topic, qid, pid, first, marker = entry.rsplit(",", 4)
                units = self.store.units(HALF_TOPIC, 0, int(op.body), 1)
                half = self.store.get(units[0][0]) if units else None
                if half is None or (_fields(half) or ())[:3] != (topic, int(qid), int(pid)):
                    log.warning("op message with an aborted-transaction entry %r for another half ignored", entry)
                elif not VISIBLE.is_aborted(topic, int(qid), int(pid), int(first)):
                    VISIBLE.add_aborted(topic, int(qid), int(pid), int(first), int(marker))
            except ValueError:
                log.warning("op message with a bad aborted-transaction entry %r ignored", entry)

    def reopen(self, undecided) -> None:
        """At start: the open transactions are the undecided half records."""
        for _hoff, half in undecided:
            f = _fields(half)
            if f is not None:
                VISIBLE.opened(f[0], f[1], f[2], f[4])

    @staticmethod
    def owns(half: StoredMessage) -> bool:
        return PROPERTY_FIRST in half.properties

    def ending(self, half: StoredMessage, commit: bool, op: Message, now: int) -> list[Message]:
        """[marker, op message] that end a half record (in one write, in a write turn: the marker's
        offset is the partition's end now)."""
        topic, qid, pid, epoch, first = _fields(half) or ("", 0, -1, -1, 0)
        if self.store.topics.get(topic) is None:  # deleted meanwhile: its records went with it
            return [op]
        marker = records.parse_batches(records.control_batch(commit, pid, epoch, now))[0]
        if not commit:
            at = self.store.max_offset(topic, qid)
            op.properties[PROPERTY_ABORTED] = f"{topic},{qid},{pid},{VISIBLE.open.get((topic, qid), {}).get(pid, first)},{at}"
        return [entry_message(topic, qid, marker, NOT_INDEXED, {}, now, False), op]

    def empty_markers(self, partitions, producer_id: int, epoch: int, commit: bool, now: int) -> list[Message]:
        """The markers of a transaction's partitions that got no record (AddPartitionsToTxn alone, or a
        Produce v12 whose batch was refused after adding it): Kafka marks every partition of the
        transaction. Partitions that do not exist (any more) or are diskless get none."""
        marker = records.parse_batches(records.control_batch(commit, producer_id, epoch, now))[0]
        out = []
        for topic, qid in sorted(partitions):
            cfg = self.store.topics.get(topic)
            if cfg is not None and 0 <= qid < max(cfg.read_queues, cfg.write_queues) and not is_diskless(cfg):
                out.append(entry_message(topic, qid, marker, NOT_INDEXED, {}, now, False))
        return out

    def ended(self, half: StoredMessage, commit: bool, marker_offset: int) -> None:
        f = _fields(half)
        if f is not None:
            VISIBLE.ended(f[0], f[1], f[2], marker_offset, commit)
            if not commit:
                self.persist()

    def forget_topic(self, topic: str) -> None:
        VISIBLE.forget_topic(topic)
        self.persist()

    def persist(self) -> None:
        self._save(CACHE_FILE, {"opScanned": self.store.max_offset(OP_TOPIC, 0), "aborted": [
            [t, q, pid, first, last] for (t, q), by_pid in VISIBLE.aborted.items()
            for pid, (lasts, firsts) in by_pid.items() for first, last in zip(firsts, lasts)]})
