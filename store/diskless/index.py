"""The per-queue index of diskless topics on the object store, and the reads it serves.

Each entry is its own object, written with `if_absent` (S3 If-None-Match: *): the store itself
decides which of two writers gets a queue's next entry, so two gateways that both believe they lead a
queue can never both commit the same offsets (the loser reads the winner's entry and retries after
it, or gives up). No lease, no home-made consensus. Blocking: call from worker threads."""
from __future__ import annotations

import bisect
import collections
import json
import logging
import struct
import threading
import uuid

from store.diskless import layout
from store.diskless.layout import IndexEntry
from store.objstore.api import NotFound, ObjectStore, ObjectStoreError, PreconditionFailed

log = logging.getLogger("rocketgate.diskless")
COMMIT_ATTEMPTS = 16  # lost conditional writes in a row before a commit gives up (a hot contended queue)
SCAN_ENTRIES = 4096  # newest entries searched for an idempotent batch another gateway committed


class AlreadyCommitted(ObjectStoreError):
    """A writer finds its idempotent batch among entries another gateway committed: a paused old
    leader whose batch the producer retried to the new leader. Committing it again would duplicate it."""


def _taken_over(producers: tuple, entries: list[IndexEntry]) -> bool:
    """Whether a committed entry holds one of `producers`' batches or a later one (same producer and
    epoch, sequence numbers ending past this batch's first) or a newer epoch of the producer (it was
    fenced and moved on): either way this batch was retried elsewhere and must not be committed.
    Walks back from the newest entry to each producer's last earlier batch (SCAN_ENTRIES at most)."""
    for pid, epoch, first, count, _at in producers:
        for entry in reversed(entries[-SCAN_ENTRIES:]):
            mine = [p for p in entry.producers if p[0] == pid]
            if any(p[1] > epoch or (p[1] == epoch and first < p[2] + p[3]) for p in mine):  # it or a later one
                return True
            if mine:  # an earlier batch of this producer: nothing older can overlap
                break
    return False


class AlreadyApplied(ObjectStoreError):
    """A committed transaction's batch is already in an entry: its end was applied before (a retry after
    a crash between the append and the deletion of the staged copy) or by another gateway at once."""


def applied_batches(entries: list[IndexEntry]) -> set[tuple]:
    """(producer id, epoch, first sequence) of the transactional batches these entries appended."""
    return {tuple(a) for e in entries for a in e.applied}


def _applied_already(applied: tuple, entries: list[IndexEntry]) -> bool:
    """Whether an entry already appends one of `applied`'s batches. Walks back from the newest entry to
    the batch's placeholder (written at produce time, before any end): nothing older can hold it."""
    for ident in applied:
        for entry in reversed(entries):
            if ident in entry.applied:
                return True
            if any(tuple(p[:3]) == ident for p in entry.producers):
                break
    return False


class _Queue:
    def __init__(self) -> None:
        self.entries: list[IndexEntry] = []
        self.bases: list[int] = []
        self.first_seq = 0  # seq of entries[0]: retention deletes entries from the front
        self.listed = False  # the entries present when this process first looked were listed
        self.lock = threading.Lock()

    @property
    def end(self) -> int:
        return self.entries[-1].end if self.entries else 0

    @property
    def next_seq(self) -> int:
        return self.first_seq + len(self.entries)

    def add(self, entry: IndexEntry) -> None:
        if not self.entries:
            self.first_seq = entry.seq
        assert entry.seq == self.next_seq, (entry.seq, self.next_seq)
        self.entries.append(entry)
        self.bases.append(entry.base)

    def drop_front(self, seq: int) -> None:
        """Forget the entries before `seq` (retention deleted them); the newest one stays."""
        n = min(max(seq - self.first_seq, 0), len(self.entries) - 1)
        if n > 0:
            del self.entries[:n]
            del self.bases[:n]
            self.first_seq += n

    def replace(self, entry: IndexEntry) -> None:
        """An entry rewritten in place (compaction moved its bytes): same offsets, new location."""
        i = entry.seq - self.first_seq
        if 0 <= i < len(self.entries) and self.entries[i].base == entry.base:
            self.entries[i] = entry


class RunCache:
    """Entries' bytes by (wal, pos), least recently used dropped past `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._runs: collections.OrderedDict = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key) -> bytes | None:
        with self._lock:
            run = self._runs.get(key)
            if run is not None:
                self._runs.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return run

    def put(self, key, run: bytes) -> None:
        with self._lock:
            if key in self._runs or len(run) > self.max_bytes:
                return
            self._runs[key] = run
            self._bytes += len(run)
            while self._bytes > self.max_bytes:
                _, old = self._runs.popitem(last=False)
                self._bytes -= len(old)


class DisklessIndex:
    """Every diskless queue's entries this gateway has seen, refreshed from the store on demand."""

    def __init__(self, store: ObjectStore, cache_bytes: int = 64 << 20) -> None:
        self.store = store
        self.cache = RunCache(cache_bytes)
        self._queues: dict[tuple[str, int], _Queue] = {}
        self._homes: dict[str, str] = {}  # topic -> the name its incarnation is kept under (layout.home)
        self._lock = threading.Lock()

    def _queue(self, topic: str, queue: int) -> _Queue:
        with self._lock:
            return self._queues.setdefault((topic, queue), _Queue())

    # -- topics -------------------------------------------------------------------------------------

    def publish_topic(self, topic: str, partitions: int) -> None:
        """Record the topic in the bucket with a new incarnation id (once: an existing record is
        kept), so every gateway of the bucket, and this one after losing its data dir, knows it."""
        try:
            self.store.put(layout.topic_key(topic), json.dumps(
                {"partitions": partitions, "id": uuid.uuid4().hex}).encode(), if_absent=True)
        except PreconditionFailed:
            pass
        self.topic_record(topic)

    def topic_record(self, topic: str) -> tuple[int, str]:
        """(partitions, home) of the topic's record in the bucket (NotFound: none); a new incarnation
        makes this index forget what it saw of the old one."""
        try:
            doc = json.loads(self.store.get(layout.topic_key(topic)))
            partitions, home = int(doc["partitions"]), layout.home(topic, doc.get("id"))
        except (ValueError, TypeError, KeyError) as exc:
            raise ObjectStoreError(f"{topic}: unreadable diskless topic record ({exc})") from None
        with self._lock:
            if self._homes.get(topic, home) != home:
                self._queues = {k: v for k, v in self._queues.items() if k[0] != topic}
            self._homes[topic] = home
        return partitions, home

    def topics(self, known=frozenset()) -> dict[str, int]:
        """The bucket's diskless topics not in `known`, with their partition counts (one LIST, one
        GET per topic returned)."""
        out = {}
        for info in self.store.list(layout.TOPICS):
            name = info.key[len(layout.TOPICS):]
            if name not in known:
                try:
                    out[name] = self.topic_record(name)[0]
                except NotFound:  # deleted meanwhile
                    continue
        return out

    def home(self, topic: str) -> str:
        """(worker thread) The name the topic's current incarnation is kept under, read from its record
        once. A topic with no record (deleted; or an index used bare, as the tests do) is kept under
        its bare name, where no incarnation with an id looks: a late write to a deleted topic is
        never seen by the topic created again."""
        home = self._homes.get(topic)
        if home is None:
            try:
                home = self.topic_record(topic)[1]
            except NotFound:
                home = self._homes.setdefault(topic, layout.home(topic, None))
        return home

    def forget_topic(self, topic: str) -> None:
        """Drop what this index saw of the topic (deleted, or created again elsewhere)."""
        with self._lock:
            self._queues = {k: v for k, v in self._queues.items() if k[0] != topic}
            self._homes.pop(topic, None)

    def index_prefix(self, topic: str, queue: int) -> str:
        return layout.index_prefix(self.home(topic), queue)

    def index_key(self, topic: str, queue: int, seq: int) -> str:
        return layout.index_key(self.home(topic), queue, seq)

    # -- the index ----------------------------------------------------------------------------------

    def end(self, topic: str, queue: int) -> int:
        """The queue's end offset as last refreshed (no request)."""
        return self._queue(topic, queue).end

    def start(self, topic: str, queue: int) -> int:
        q = self._queue(topic, queue)
        return q.entries[0].base if q.entries else 0

    def entries(self, topic: str, queue: int) -> list[IndexEntry]:
        """The queue's entries as last refreshed, oldest first."""
        q = self._queue(topic, queue)
        with q.lock:
            return list(q.entries)

    def refresh(self, topic: str, queue: int) -> int:
        """Read the entries other writers committed since the last look; the queue's end offset."""
        q = self._queue(topic, queue)
        with q.lock:
            self._catch_up(topic, queue, q)
            return q.end

    def _catch_up(self, topic: str, queue: int, q: _Queue) -> None:
        if not q.listed:  # first look: list what is there (a wiped data dir, another gateway's queue)
            for seq in self._listed_seqs(topic, queue):
                if q.entries and seq != q.next_seq:
                    break
                try:
                    q.add(IndexEntry.decode(self.store.get(self.index_key(topic, queue, seq))))
                except NotFound:  # retention deleted it meanwhile: the queue starts later
                    if q.entries:
                        raise ObjectStoreError(f"diskless {topic}-{queue}: entry {seq} vanished") from None
            q.listed = True
        while True:  # then probe the next sequence numbers until one is absent
            try:
                data = self.store.get(self.index_key(topic, queue, q.next_seq))
            except NotFound:
                return
            q.add(IndexEntry.decode(data))

    def _listed_seqs(self, topic: str, queue: int) -> list[int]:
        """The queue's entry numbers in the store, from the start of their newest unbroken run (an
        entry left behind below the start, a compaction rewrite racing retention, is not the queue's)."""
        seqs = sorted(s for s in (layout.seq_of(i.key) for i in self.store.list(self.index_prefix(topic, queue)))
                      if s is not None)
        first = len(seqs)
        while first > 0 and (first == len(seqs) or seqs[first - 1] == seqs[first] - 1):
            first -= 1
        return seqs[first:]

    def forget(self, topic: str, queue: int) -> None:
        """Drop the queue's entries: the next refresh lists it again (its start moved under us)."""
        with self._lock:
            self._queues.pop((topic, queue), None)

    def drop_front(self, topic: str, queue: int, seq: int) -> None:
        q = self._queue(topic, queue)
        with q.lock:
            q.drop_front(seq)

    def replace(self, topic: str, queue: int, entry: IndexEntry) -> None:
        q = self._queue(topic, queue)
        with q.lock:
            q.replace(entry)

    def commit(self, topic: str, queue: int, wal: str, pos: int, run: bytes, count: int,
               max_ts: int = -1, producers: tuple = (), applied: tuple = ()) -> IndexEntry:
        """Give the batches at [pos, pos + len(run)) of `wal` the queue's next offsets: write the next
        entry with if_absent; after a lost race read the winner's entries and try the next slot.
        ObjectStoreError when the store fails or the queue stays contended; AlreadyApplied when one of
        the committed transactions' batches `applied` is in an entry already: every entry before the
        slot won is known when it is checked, so two writers can never both append it."""
        q = self._queue(topic, queue)
        with q.lock:
            if not q.listed:
                self._catch_up(topic, queue, q)
            for _ in range(COMMIT_ATTEMPTS):
                if producers and _taken_over(producers, q.entries):  # learned now or at an earlier refresh
                    log.warning("diskless %s-%d: fenced: an idempotent batch of %s was committed by another gateway; "
                                "not committed again", topic, queue, wal)
                    raise AlreadyCommitted(f"diskless {topic}-{queue}: batch committed meanwhile by another "
                                           "gateway (this one was paused or lost the lead)")
                if applied and _applied_already(applied, q.entries):
                    raise AlreadyApplied(f"diskless {topic}-{queue}: a transaction's batch was appended already")
                entry = IndexEntry(q.next_seq, q.end, count, wal, pos, len(run), max_ts, producers, applied)
                try:
                    self.store.put(self.index_key(topic, queue, entry.seq), entry.encode(), if_absent=True)
                except PreconditionFailed:  # another writer took this slot: fenced, learn its entries
                    log.warning("diskless %s-%d: fenced: slot %d was taken by another writer; committing after it",
                                topic, queue, entry.seq)
                    self._catch_up(topic, queue, q)
                    continue
                q.add(entry)
                self.cache.put((wal, pos), run)
                return entry
        raise ObjectStoreError(f"diskless {topic}-{queue}: {COMMIT_ATTEMPTS} index writes lost in a row")

    def read(self, topic: str, queue: int, offset: int, max_bytes: int) -> bytes:
        """Record batches from the one holding `offset` on, up to about `max_bytes` (at least one
        entry), from the cache or ranged GETs of the WAL objects. Call `refresh` first for news."""
        q = self._queue(topic, queue)
        with q.lock:
            entries = list(q.entries)
            bases = list(q.bases)
        i = bisect.bisect_right(bases, offset) - 1
        out = []
        total = 0
        for entry in entries[max(i, 0):]:
            if entry.end <= offset:
                continue
            run = self._run(entry, topic, queue)
            try:
                piece = layout.batches_from(run, entry.base, offset)
            except struct.error as exc:  # a WAL range that is not record batches: refuse, never crash
                raise ObjectStoreError(f"{entry.wal}@{entry.pos}: unreadable batches ({exc})") from None
            out.append(piece)
            total += len(piece)
            if total >= max_bytes:
                break
        return b"".join(out)

    def run_of(self, topic: str, queue: int, entry: IndexEntry) -> bytes:
        """The entry's batches as stored (offsets not patched), wherever they are now."""
        return self._run(entry, topic, queue)

    def _run(self, entry: IndexEntry, topic: str = "", queue: int = -1) -> bytes:
        key = (entry.wal, entry.pos)
        run = self.cache.get(key)
        if run is None:
            try:
                run = self.store.get(entry.wal, entry.pos, entry.pos + entry.size)
            except NotFound:  # compaction moved the bytes (read the entry again) or retention took them
                if queue < 0:
                    raise
                entry = self._reread(topic, queue, entry)
                run = self.store.get(entry.wal, entry.pos, entry.pos + entry.size)
            if len(run) != entry.size:
                raise ObjectStoreError(f"{entry.wal}: {len(run)} bytes at {entry.pos}, the index says {entry.size}")
            self.cache.put((entry.wal, entry.pos), run)
        return run

    def _reread(self, topic: str, queue: int, entry: IndexEntry) -> IndexEntry:
        """The entry as the store has it now; ObjectStoreError (and the queue listed again at the
        next refresh) when retention deleted it."""
        try:
            fresh = IndexEntry.decode(self.store.get(self.index_key(topic, queue, entry.seq)))
        except NotFound:
            self.forget(topic, queue)
            raise ObjectStoreError(f"diskless {topic}-{queue}: offset {entry.base} was deleted by retention") from None
        self.replace(topic, queue, fresh)
        return fresh

    def max_timestamp(self, topic: str, queue: int) -> tuple[int, int]:
        """(offset, timestamp) of the newest batch's max timestamp, Kafka's MAX_TIMESTAMP answer."""
        q = self._queue(topic, queue)
        best = (-1, -1)
        for e in q.entries:
            if e.max_ts >= best[1]:
                best = (e.end - 1, e.max_ts)
        return best

    def offset_for_time(self, topic: str, queue: int, ts: int) -> tuple[int, int]:
        """(base offset, -1) of the first entry holding a record at or after `ts`; (-1, -1) if none."""
        q = self._queue(topic, queue)
        for e in q.entries:
            if e.max_ts >= ts:
                return e.base, e.max_ts
        return -1, -1
