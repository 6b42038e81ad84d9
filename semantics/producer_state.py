"""Idempotent-producer state: producer id allocation and per-partition sequence dedup.

Producer ids are allocated from a counter reserved on disk a block at a time (through the App's
off-loop config writer, or `store.write_config` without one), so a restart never hands out an id
twice. Sequence state lives in memory and is re-derived after a restart from the
data itself, as Kafka rebuilds it from its log: the first time a (producer, partition) is seen, the
RecordBatch headers (producer id, epoch, base sequence, count) of the partition's last
`TAIL_UNITS` ConsumeQueue units are read back, so a retry of a batch stored before the restart is
still a duplicate. Older than that tail, a producer is accepted at any sequence (as Kafka does
once producer state has expired).

Unlike Kafka's log, the partition is not the only place a batch goes: a delayed run (DELAY /
__STARTDELIVERTIME) waits in the schedule topic and is appended to the partition when due (after
newer batches), a transactional batch waits in the half topic (and stays only there if aborted).
So the tails of those topics (entries naming the partition in REAL_TOPIC / REAL_QID, indexed once)
count too, and the rebuilt batches are ordered by sequence, not by where they were found. The
partition holds every batch whole (its entry keeps the batch's sequence range, with gaps where records
wait elsewhere), so a run found elsewhere inside a batch's range is part of that batch.
"""
from __future__ import annotations

import collections
import dataclasses
import os
import time

from codec.kafka.records import MAX_TS_AT
from codec.remoting.message import BODY_AT, INT64, QUEUE_OFFSET_AT, MessageFormatError, decode
from interop.inner_batch import producer_fields
from semantics.routing import HALF_TOPIC, PROPERTY_REAL_QID, PROPERTY_REAL_TOPIC, SCHEDULE_TOPIC
from store.txn_id_journal import TxnIdJournal

CONFIG_NAME = "kafkaProducerIds"
ID_BLOCK = 1000  # producer ids reserved on disk per write
CACHED_BATCHES = 5  # Kafka keeps the metadata of the last five batches per producer and partition
TAIL_UNITS = 2000  # how far back a partition's tail is read to rebuild state after a restart
# Where a partition's batches also wait: delayed runs, transactional halves (aborted ones stay).
SIDE_TOPICS = (SCHEDULE_TOPIC, HALF_TOPIC)

OK, DUPLICATE, OUT_OF_ORDER, FENCED = "ok", "duplicate", "out_of_order", "fenced"


@dataclasses.dataclass
class _Entry:
    epoch: int
    # (first_seq, last_seq, base_offset) of the last batches, newest last
    batches: collections.deque
    last_ms: int = 0  # wall time of its last batch (producer.id.expiration.ms)


class ProducerState:
    def __init__(self, store, writer=None) -> None:
        self.store = store
        # ids below `_reserved_to` are reserved on disk: a restart starts there, so no id is reused
        self._next_id = self._reserved_to = int(store.read_config(CONFIG_NAME, {"next": 1000}).get("next", 1000))
        self._writer = writer
        self.reservation = 0  # the writer's number of the newest reservation (0: none)
        self._by_partition: dict[tuple[int, str, int], _Entry] = {}
        self._rebuilt: set[tuple[int, str, int]] = set()  # keys whose stored tail was read
        # (pid, real topic, real partition) -> [(epoch, first_seq, last_seq, queue offset)] of the
        # batches in the side topics' tails, read once (at the first rebuild)
        self._side: dict[tuple[int, str, int], list] | None = None
        self.id_source = None  # a cluster member takes ids from its block in etcd instead

    def allocate(self) -> int:
        """A fresh producer id. Ids are reserved on disk a block at a time (one write per
        ID_BLOCK ids): in place, or through the writer, whose `reservation` the caller waits for
        before handing the id out. A cluster member takes ids from its etcd block (`id_source`)."""
        if self.id_source is not None:
            return self.id_source()
        pid = self._next_id
        self._next_id += 1
        if self._next_id > self._reserved_to:
            self._reserved_to = pid + ID_BLOCK
            doc = {"next": self._reserved_to}
            if self._writer is None:
                self.store.write_config(CONFIG_NAME, doc)
            else:
                self.reservation = self._writer.submit(CONFIG_NAME, doc)
        return pid

    async def reserved(self) -> None:
        """Wait until every id handed out so far is reserved on disk."""
        if self._writer is not None and self.reservation:
            await self._writer.written(CONFIG_NAME, self.reservation)

    def check(self, pid: int, epoch: int, topic: str, partition: int, first_seq: int, count: int):
        """(verdict, base_offset_of_duplicate) for a batch about to be appended."""
        key = (pid, topic, partition)
        entry = self._by_partition.get(key)
        if entry is None and key not in self._rebuilt:
            self._rebuilt.add(key)
            entry = self._rebuild(pid, topic, partition)
        if entry is None:
            return OK, None
        if epoch < entry.epoch:
            return FENCED, None
        if epoch > entry.epoch:
            return (OK, None) if first_seq == 0 else (OUT_OF_ORDER, None)
        last_seq = _add(first_seq, count - 1)
        for b_first, b_last, b_offset in entry.batches:
            if b_first == first_seq and b_last == last_seq:
                return DUPLICATE, b_offset
        expected = _add(entry.batches[-1][1], 1)
        return (OK, None) if first_seq == expected else (OUT_OF_ORDER, None)

    def record(self, pid: int, epoch: int, topic: str, partition: int, first_seq: int, count: int,
               base_offset: int) -> None:
        key = (pid, topic, partition)
        entry = self._by_partition.get(key)
        if entry is None and key not in self._rebuilt:
            # forgotten since `check` (this node became a queue's leader meanwhile): the stored tail,
            # this batch included, is the state; a one-batch entry would miss the batches before it
            self._rebuilt.add(key)
            entry = self._rebuild(pid, topic, partition)
        if entry is None or entry.epoch != epoch:
            entry = self._by_partition[key] = _Entry(epoch, collections.deque(maxlen=CACHED_BATCHES))
        batch = (first_seq, _add(first_seq, count - 1), base_offset)
        if batch not in entry.batches:
            entry.batches.append(batch)
        entry.last_ms = int(time.time() * 1000)

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `expiration_ms` (Kafka's producer.id.expiration.ms): their next
        batch is accepted at any sequence. Returns how many (producer, partition) states went."""
        idle = [k for k, e in self._by_partition.items() if e.last_ms and now_ms - e.last_ms >= expiration_ms]
        for key in idle:
            del self._by_partition[key]
        return len(idle)

    def describe(self, topic: str, partition: int) -> dict[int, tuple[int, int, int]]:
        """producer id -> (epoch, last sequence, last batch's max timestamp) of the producers whose
        batches are in the partition's tail, as stored (DescribeProducers)."""
        out = {}
        for pid, epoch, _first, last, _offset, raw in self._tail(topic, partition, None):
            out[pid] = (epoch, last, INT64.unpack_from(raw, BODY_AT + MAX_TS_AT)[0])
        return out

    def _rebuild(self, pid: int, topic: str, partition: int) -> _Entry | None:
        """The producer's last batches, from the partition's stored tail and the side topics (None
        if it has none), in sequence order."""
        found: dict[tuple[int, int, int], int] = {}  # (epoch, first, last) -> base offset
        for _pid, epoch, first, last, offset, _raw in self._tail(topic, partition, pid):
            found.setdefault((epoch, first, last), offset)
        for epoch, first, last, offset in self._side_batches().get((pid, topic, partition), ()):
            found.setdefault((epoch, first, last), offset)  # a delivered / committed copy wins
        if not found:
            return None
        epoch = max(e for e, _f, _l in found)
        mine = [(f, l, off) for (e, f, l), off in found.items() if e == epoch]
        # a delayed run of a batch (scheduled, or delivered since) holds part of the batch's range,
        # which its entry in the partition holds whole: the whole batch is what a retry repeats
        mine = [b for b in mine if not any(o[0] <= b[0] and b[1] <= o[1] and o[:2] != b[:2] for o in mine)]
        firsts = [f for f, _l, _o in mine]
        wrapped = max(firsts) - min(firsts) > 1 << 30  # sequences wrapped at int32 max in between
        mine.sort(key=lambda b: b[0] + (1 << 31) if wrapped and b[0] < 1 << 30 else b[0])
        entry = _Entry(epoch, collections.deque(mine, maxlen=CACHED_BATCHES))
        self._by_partition[(pid, topic, partition)] = entry
        return entry

    def _tail(self, topic: str, queue_id: int, pid: int | None):
        """(producer id, epoch, first_seq, last_seq, queue offset, raw entry) of the Kafka batches of
        producer `pid` (any, if None) in the last TAIL_UNITS units of a queue."""
        s = self.store
        high = s.max_offset(topic, queue_id)
        start = max(s.min_offset(topic, queue_id), high - TAIL_UNITS)
        last_phys = None
        for phys, size, _code in s.units(topic, queue_id, start, high - start):
            if phys == last_phys:
                continue  # the other records of the same batch entry
            last_phys = phys
            raw = s.read_entry(phys, size)
            fields = producer_fields(raw)  # header fields only: no decode of the entry
            if fields is None:
                continue
            b_pid, b_epoch, b_seq, b_count = fields
            if b_seq < 0 or b_pid < 0 or (pid is not None and b_pid != pid):
                continue
            yield b_pid, b_epoch, b_seq, _add(b_seq, b_count - 1), INT64.unpack_from(raw, QUEUE_OFFSET_AT)[0], raw

    def _side_batches(self) -> dict[tuple[int, str, int], list]:
        if self._side is None:
            side = collections.defaultdict(list)
            for t in SIDE_TOPICS:
                for q in self.store.queues(t):
                    for pid, epoch, first, last, offset, raw in self._tail(t, q, None):
                        try:
                            props = decode(raw).properties
                            real = (pid, props[PROPERTY_REAL_TOPIC], int(props[PROPERTY_REAL_QID]))
                        except (MessageFormatError, KeyError, ValueError):
                            continue
                        side[real].append((epoch, first, last, offset))
            self._side = dict(side)
        return self._side

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self._by_partition if k[1] == topic]:
            del self._by_partition[key]
        self._rebuilt = {k for k in self._rebuilt if k[1] != topic}
        self._side = None  # read again at the next rebuild: the side topics' tails grew meanwhile


def _add(seq: int, n: int) -> int:
    """Sequence arithmetic wraps at int32 max, like Kafka's DefaultRecordBatch.incrementSequence."""
    return (seq + n) % (1 << 31)


# ---------------------------------------------------------------- Kafka transactions

TXN_CONFIG = "kafkaTransactionalIds"
MAX_EPOCH = 32767
NONE_ERR, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, UNKNOWN_PRODUCER_ID, PRODUCER_FENCED = 0, 47, 48, 59, 90
RETRIED = "retried"  # a KIP-360 InitProducerId repeating one already answered: the same answer again


def reinit_verdict(expected: tuple[int, int] | None, pid: int, epoch: int, last: tuple[int, int] | None):
    """KIP-360: what an InitProducerId naming the client's (producer id, epoch) `expected` gets from a
    transactional id now at (pid, epoch) whose previous InitProducerId moved it from `last`: None (go
    on: bump the epoch), RETRIED (a retry of that one: answer (pid, epoch) again) or PRODUCER_FENCED
    (another instance took over), as Kafka's coordinator answers."""
    if expected is None or expected == (pid, epoch):
        return None
    if last is not None and tuple(expected) == tuple(last):
        return RETRIED
    return PRODUCER_FENCED


class ClusterUnavailable(Exception):
    """The cluster's transaction state (gateway.cluster.txns) is out of reach: COORDINATOR_NOT_AVAILABLE."""


@dataclasses.dataclass
class Txn:
    """One transactional.id: its producer id/epoch and the transaction in progress (if any)."""
    txn_id: str
    producer_id: int
    epoch: int
    timeout_ms: int = 60_000
    started_ms: int | None = None  # None: no transaction in progress
    halves: list = dataclasses.field(default_factory=list)  # half offsets, in produce order
    offsets: list = dataclasses.field(default_factory=list)  # (group, topic, partition, offset, metadata)
    partitions: set = dataclasses.field(default_factory=set)  # (topic, partition) added to the transaction
    written: set = dataclasses.field(default_factory=set)  # those of `partitions` a batch was stored in
    state: str = "Empty"  # Kafka's TransactionState name (DescribeTransactions / ListTransactions)
    last_start_ms: int = -1  # start of the current or last transaction (-1 after InitProducerId)
    previous: tuple | None = None  # (producer id, epoch) before the last v2 end's bump (its retries)
    last: tuple | None = None  # (producer id, epoch) before the last InitProducerId (KIP-360 retries)


class TransactionalProducers:
    """Kafka's transaction coordinator mapped onto the half/op machinery (`app.transactions`):
    transactional batches are stored as half messages (PGROUP = transactional.id), EndTxn commits
    or rolls back each half in produce order (the committed copy gets its real-topic offset then),
    TxnOffsetCommit offsets are applied on commit only. The transactional.id → (producer id,
    epoch) table is persisted, so epochs keep fencing after a restart; a transaction in progress
    at a restart is fenced (epoch bump) and aborted when its halves come up for check-back (`check`)."""

    def __init__(self, app, producers: ProducerState) -> None:
        self.app = app
        self.producers = producers
        self.by_id: dict[str, Txn] = {}
        self.by_pid: dict[int, Txn] = {}
        self.submission = 0  # the writer's number of the newest change an answer must wait for (0: none)
        self.journal = TxnIdJournal(os.path.join(app.store.path, "config"))  # the table on disk
        for tid, rec in self.journal.table.items():
            self._index(Txn(tid, int(rec["pid"]), int(rec["epoch"]), int(rec.get("timeout", 60_000)),
                            last=tuple(rec["last"]) if rec.get("last") else None))
        # A transaction left open by the previous process lost its in-memory half list (and its
        # TxnOffsetCommit offsets), so it can only be aborted: bump the epoch now, or a later
        # EndTxn(commit) of its producer would be answered "ok" while its records are rolled back.
        left_open = [t for g, t in self.by_id.items() if g in app.transactions.open_groups_at_start]
        for txn in left_open:
            txn.epoch += 1
            self._persist(txn)

    def _index(self, txn: Txn) -> None:
        self.by_id[txn.txn_id] = txn
        self.by_pid[txn.producer_id] = txn

    def _persist(self, txn: Txn) -> None:
        """Journal `txn`'s record (store.txn_id_journal: appended now, it survives a kill -9); answers wait
        for the writer's fdatasync of it in sync flush mode only (or when the append failed)."""
        queued = self.journal.put(txn.txn_id, {"pid": txn.producer_id, "epoch": txn.epoch,
                                               "timeout": txn.timeout_ms, "last": txn.last})
        number = self.app.config_writer.submit(TXN_CONFIG, self.journal)
        if queued or self.app.sync_flush:
            self.submission = number

    async def persisted(self) -> None:
        """Wait until the table's newest change and the producer ids handed out are durable (`_persist`)."""
        await self.producers.reserved()
        if self.submission:
            await self.app.config_writer.written(TXN_CONFIG, self.submission)

    def init(self, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None = None) -> tuple[int, int, int, list]:
        """InitProducerId with a transactional.id: abort what is in progress, bump the epoch (a new
        producer id when it would overflow); (error, producer id, epoch), durable first. `expected`:
        the re-initialising client's (producer id, epoch) (KIP-360, `reinit_verdict`)."""
        txn = self.by_id.get(txn_id)
        verdict = None if txn is None else reinit_verdict(expected, txn.producer_id, txn.epoch, txn.last)
        if verdict == PRODUCER_FENCED:
            return PRODUCER_FENCED, -1, -1, []
        if verdict == RETRIED:
            return NONE_ERR, txn.producer_id, txn.epoch, []
        last = None if txn is None else (txn.producer_id, txn.epoch)
        ends = []
        if txn is None or txn.epoch >= MAX_EPOCH - 1:
            if txn is not None:
                ends = self.finish(txn, commit=False)
                self.by_pid.pop(txn.producer_id, None)
            txn = Txn(txn_id, self.producers.allocate(), 0)
        else:
            ends = self.finish(txn, commit=False)
            txn.epoch += 1
        txn.timeout_ms, txn.last = timeout_ms, last
        txn.state, txn.last_start_ms = "Empty", -1
        self._index(txn)
        self._persist(txn)
        return NONE_ERR, txn.producer_id, txn.epoch, ends

    def lookup(self, txn_id: str, pid: int, epoch: int) -> tuple[int, Txn | None]:
        """(error, txn) for a request naming a transactional producer; older epochs are fenced."""
        txn = self.by_id.get(txn_id)
        if txn is None or txn.producer_id != pid:
            return UNKNOWN_PRODUCER_ID if txn is None else INVALID_PRODUCER_EPOCH, None
        if epoch != txn.epoch:
            return INVALID_PRODUCER_EPOCH, None
        return NONE_ERR, txn

    def begin(self, txn: Txn, now_ms: int) -> None:
        if txn.started_ms is None:
            txn.started_ms = txn.last_start_ms = now_ms
            txn.state = "Ongoing"

    def for_batch(self, pid: int, epoch: int, now_ms: int, partition: tuple[str, int],
                  implicit_add: bool) -> tuple[int, Txn | None]:
        """(error, txn) for a transactional record batch about to be stored as a half message. A
        partition not added to the transaction is refused (INVALID_TXN_STATE, KIP-890 part 1
        verification) unless the produce adds it implicitly (Produce v12+: transactions v2)."""
        txn = self.by_pid.get(pid)
        if txn is None:
            return UNKNOWN_PRODUCER_ID, None
        if epoch != txn.epoch:
            return INVALID_PRODUCER_EPOCH, None
        if partition not in txn.partitions:
            if not implicit_add or self.ending(txn):
                return INVALID_TXN_STATE, None
            txn.partitions.add(partition)
        self.begin(txn, now_ms)
        return NONE_ERR, txn

    @staticmethod
    def stored(txn: Txn, partition: tuple, half_offsets: list) -> None:
        """A batch of the transaction was stored in `partition`, with these halves."""
        txn.halves.extend(half_offsets)
        txn.written.add(partition)

    def retried_end(self, txn_id: str, pid: int, epoch: int, commit: bool) -> Txn | None:
        """The transaction whose v2 end (epoch bumped to epoch + 1) this EndTxn repeats, or None."""
        txn = self.by_id.get(txn_id)
        if txn is None or txn.started_ms is not None or txn.previous != (pid, epoch):
            return None
        return txn if txn.state == ("CompleteCommit" if commit else "CompleteAbort") else None

    def bump_epoch(self, txn: Txn) -> None:
        """Transactions v2: every end bumps the epoch (a new producer id when it would overflow), so a
        late write or a retried end of the transaction just ended is fenced."""
        txn.previous = (txn.producer_id, txn.epoch)
        if txn.epoch >= MAX_EPOCH - 1:
            self.by_pid.pop(txn.producer_id, None)
            txn.producer_id, txn.epoch = self.producers.allocate(), 0
            self._index(txn)
        else:
            txn.epoch += 1
        self._persist(txn)

    def finish(self, txn: Txn, commit: bool) -> list:
        """Commit or abort the transaction in progress; the AppendResults to wait durable for."""
        halves, offsets = self._close(txn, commit)
        ends = []
        for half in halves:
            _result, r = self.app.transactions.end(half, commit, producer_group=txn.txn_id)
            if r is not None:
                ends.append(r)
        self._completed(txn, commit, offsets)
        return ends

    async def finish_in_turn(self, txn: Txn, commit: bool) -> list:
        """`finish` with each half's end appended through the send flow control (`app.flow`), as a
        Produce is: off the event loop while the disk is slow. The transaction is closed before the
        first append (state PrepareCommit / PrepareAbort), so nothing joins or ends it meanwhile."""
        empty = txn.partitions - txn.written  # (taken before _close clears both)
        halves, offsets = self._close(txn, commit)
        ends = []
        for half in halves:
            _result, r = await self.app.transactions.end_in_turn(self.app.flow, half, commit,
                                                                 producer_group=txn.txn_id)
            if r is not None:
                ends.append(r)
        ends += await self.app.transactions.mark_empty(self.app.flow, empty, txn.producer_id, txn.epoch, commit)
        self._completed(txn, commit, offsets)
        return ends

    @staticmethod
    def _close(txn: Txn, commit: bool) -> tuple[list, list]:
        """Take the transaction's halves and offsets off it: (halves, offsets to apply on commit)."""
        halves, offsets = txn.halves, (txn.offsets if commit else [])
        if txn.started_ms is not None:
            txn.state = "PrepareCommit" if commit else "PrepareAbort"
        txn.started_ms, txn.halves, txn.offsets, txn.partitions, txn.written = None, [], [], set(), set()
        return halves, offsets

    def _completed(self, txn: Txn, commit: bool, offsets: list) -> None:
        for group, topic, partition, offset, metadata in offsets:
            self.app.offsets.commit(group, topic, partition, offset, metadata)
        if offsets:
            self.app.offsets.persist()
        if txn.state in ("PrepareCommit", "PrepareAbort"):
            txn.state = "CompleteCommit" if commit else "CompleteAbort"

    def ending(self, txn: Txn) -> bool:
        """Is an end of its transaction still being written (Kafka: CONCURRENT_TRANSACTIONS meanwhile)?"""
        return txn.state in ("PrepareCommit", "PrepareAbort")

    async def check(self, producer_group: str, half, body: bytes) -> bool:
        """Transaction checker (`register_checker`): a Kafka half that comes up for check-back is
        past its transaction timeout, so its transaction is aborted (with an epoch bump, which
        fences the late producer, as Kafka's coordinator does); orphans of an earlier process
        are rolled back. False for groups that are not Kafka transactional ids."""
        txn = self.by_id.get(producer_group)
        if txn is None:
            return False
        if half.queue_offset in txn.halves:
            await self.expire(txn)
        else:
            await self.app.transactions.end_in_turn(self.app.flow, half.queue_offset, False,
                                                    producer_group=producer_group)
        return True

    async def expire(self, txn: Txn) -> None:
        """Fence the producer (epoch bump) first, then abort what it had in progress."""
        txn.epoch += 1
        self._persist(txn)
        await self.finish_in_turn(txn, commit=False)

    async def expire_due(self, now_ms: int) -> None:
        """Abort every transaction in progress past its timeout (called on transaction requests)."""
        for txn in list(self.by_id.values()):
            if txn.started_ms is not None and now_ms - txn.started_ms > txn.timeout_ms:
                await self.expire(txn)
