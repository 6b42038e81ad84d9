"""The store facade (RocketMQ's DefaultMessageStore): composes the CommitLog, the ConsumeQueues,
the IndexFiles, the dispatcher list, recovery, flush and retention behind the `MessageStore` API
(store.api). Layout under the store directory:

    commitlog/<20-digit start offset>        entries in the MessageDecoder layout (codec.remoting.message)
    consumequeue/<topic>/<queueId>/<20-digit> 20-byte units; .checkpoint = CommitLog offset covered
    index/<yyyyMMddHHmmssSSS>                  IndexFiles; .checkpoint likewise
    config/*.json                              topics.json and the other tables, written atomically

Opening is two steps: `Store(path, config)` opens the files and cuts the derived data back to its
checkpoints; `recover()` replays the CommitLog past them through the dispatchers. Dispatchers that
must see the replay (filtered views) are added in between: `store.open(path, config, recover=False)`,
`add_dispatcher(...)`, `recover()`. `store.open(path, config)` does both steps at once.

Threads: reads and retention on the event loop, `flush` on a worker thread, appends on either. `_lock`
guards the ConsumeQueue buffers and the CommitLog end; `_write_lock` (taken first) serializes writers
and is all an append holds while writing: a slow disk holds up the next writer, no reader, no flush.
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from typing import Sequence

from codec.remoting import message as M
from store.replica import append_replicated, truncate_queue
from store.rewrite import rewrite
from store.recovery import load, replay, rewrites_apart
from store.retention import delete_expired, expiry_cut
from store.api import AppendResult, ReadResult, StoreConfig, StoreError
from store.commitlog import CommitLog
from store.config import ConfigDir, TopicTable
from store.consumequeue import UNIT, ConsumeQueueTable
from store.dispatch import ConsumeQueueDispatcher, Dispatcher, DispatchRequest, IndexDispatcher
from store.flush import Flusher
from store.indexfile import IndexService
from store.quarantine import Quarantine, verify
from store.seams import before_write
from store.space import DiskGuard, guard_space

log = logging.getLogger("rocketgate.store")
LOG_STARTS = "logStartOffsets"  # config/logStartOffsets.json: {topic: {queue id: first readable offset}}


def _raise_fd_limit() -> None:
    """Every CommitLog and ConsumeQueue file keeps a descriptor open: allow as many as the hard limit does."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass


class Store:
    def __init__(self, path: str, config: StoreConfig | None = None) -> None:
        _raise_fd_limit()
        self.path = path
        self.config = config = config or StoreConfig()
        if config.commitlog_file_size < 4096:
            raise ValueError("commitlog_file_size too small")
        os.makedirs(path, exist_ok=True)
        self._lock = threading.RLock()
        self._write_lock = threading.RLock()  # serializes CommitLog writers (taken before _lock)
        self.write_began = self.flush_began = None  # monotonic start of the append / flush in progress
        self.last_flush_s = 0.0  # how long the last flush took (a slow disk shows here first)
        self.space = DiskGuard(path, config.disk_max_used_space_ratio)
        self._cfg = ConfigDir(os.path.join(path, "config"))
        self.topics = TopicTable(self._cfg, on_delete=self._drop_topic)
        self.commitlog = CommitLog(os.path.join(path, "commitlog"), config)
        self.quarantine = self.commitlog.quarantine = Quarantine(self._cfg)
        self.consume_queues = ConsumeQueueTable(os.path.join(path, "consumequeue"), config.cq_units_per_file)
        self.index = IndexService(os.path.join(path, "index"), config.index_slots, config.index_entries,
                                  on_space_error=self.space.allocation_failed)
        self._flusher = Flusher(self.commitlog, self.consume_queues, self.index, self._lock, self.topics.sync_journal)
        self._index_dispatcher = IndexDispatcher(self.index)
        self._builtin = (ConsumeQueueDispatcher(self.consume_queues), self._index_dispatcher)
        self._dispatchers: list = list(self._builtin)
        self._write_observer = None
        self._flush_observer = None
        self.trusted_from = 0  # set by recover()
        self._replay_from = load(self.commitlog, self.consume_queues, self.index)
        self.recovered = False

    # ------------------------------------------------------------------ dispatch and recovery

    def add_dispatcher(self, dispatcher: Dispatcher) -> None:
        """Append to the dispatcher list; it sees every entry appended from now on, and the replay
        if added before `recover()`."""
        with self._lock:
            self._dispatchers.append(dispatcher)

    def recover(self) -> None:
        """Replay the CommitLog past the checkpoints through the dispatchers (once; then a no-op)."""
        with self._lock:
            if self.recovered:
                return
            cq_start, index_start = self._replay_from
            replay(self.commitlog, cq_start, index_start, self._index_dispatcher,
                   list(self._dispatchers), rewrites_apart(self._feed, self._builtin[0]))
            self.trusted_from = self.commitlog.end  # entries from here on are written by this process
            self.commitlog.synced = self.commitlog.begin
            self._flusher.flushed_offset = self.commitlog.sync()
            self._flusher.derived = self.recovered = True
            self._apply_log_starts()

    def dispatch(self, requests: Sequence[DispatchRequest]) -> None:
        """Feed requests that need no CommitLog write (units of a filtered view, pointing at entries
        of its base topic) through the dispatcher list."""
        if requests:
            with self._lock:
                self._feed(self._dispatchers, requests)

    def _feed(self, dispatchers, requests) -> None:
        for d in dispatchers:
            try:
                d.dispatch(requests)
            except Exception:
                if d in self._builtin:
                    raise
                log.exception("store dispatcher %r failed", d)  # its bug must not fail the append

    # ------------------------------------------------------------------ appending

    def append(self, msg: M.Message) -> AppendResult:
        return self.append_many((msg,))[0]

    def append_many(self, msgs) -> list[AppendResult]:
        """Append messages in one CommitLog write, then dispatch them; all or nothing on bad input."""
        if self._flusher.closed:
            raise StoreError("store is closed")
        if not self.recovered:
            raise StoreError("store is not recovered yet")
        if not isinstance(msgs, (list, tuple)):
            msgs = list(msgs)
        with self._write_lock:  # one writer at a time; readers and the flusher only wait for _lock
            with self._lock:
                if self._flusher.closed:  # closed while this append waited for its turn
                    raise StoreError("store is closed")
                self.space.check(self.commitlog.end)  # raises StoreFull while the disk is (too) full
                prepared = guard_space(self.space, self.commitlog.prepare, msgs, self.consume_queues.next_offset)
            began = self.write_began = time.monotonic()
            try:  # no store lock while writing: on a slow disk this may block for seconds
                before_write(self.config)  # test seams: a throttled or a stalled disk (store.seams)
                guard_space(self.space, self.commitlog.write_prepared, prepared)
                with self._lock:
                    results, requests = self.commitlog.publish(prepared)
                    self._feed(self._dispatchers, requests)
            finally:
                self.write_began = None
                if self._write_observer is not None:
                    self._write_observer(began, time.monotonic())
        return results

    def append_replicated(self, topic: str, queue_id: int, queue_offset: int, entries) -> list[AppendResult]:
        """Entries copied from a leader, at the queue offsets it gave them (store.replica)."""
        return append_replicated(self, topic, queue_id, queue_offset, entries)

    def truncate_queue(self, topic: str, queue_id: int, offset: int) -> int:
        """Cut a queue back to end at `offset` (a replica's diverged suffix; store.replica)."""
        return truncate_queue(self, topic, queue_id, offset)

    def rewrite(self, topic: str, queue_id: int, start: int, end: int, body: bytes) -> AppendResult:
        """Compaction: `body` now serves offsets [start, end) of the queue (store.rewrite)."""
        return rewrite(self, topic, queue_id, start, end, body)

    def set_write_observer(self, observe) -> None:
        """`observe(began, ended)` (monotonic seconds) after every write, under the store lock: how long
        each write held the store (send flow control)."""
        self._write_observer = observe

    # ------------------------------------------------------------------ reading by CommitLog offset

    @property
    def max_physical_offset(self) -> int:
        return self.commitlog.end

    @property
    def min_physical_offset(self) -> int:
        return self.commitlog.begin

    def read_entry(self, phys: int, size: int) -> bytes:
        return self.commitlog.read_entry(phys, size)

    def open_entry_range(self, phys: int, size: int) -> tuple[int, int] | None:
        """(fd, offset in its file) of CommitLog bytes [phys, phys + size), for zero-copy sends; the
        caller closes the fd. None when the range is not stored whole in one file."""
        return self.commitlog.open_entry_range(phys, size)

    def get(self, phys: int) -> M.StoredMessage | None:
        """Decode the entry at CommitLog offset `phys`, None if there is none (or it is quarantined)."""
        return self.commitlog.get(phys)

    def disk_status(self) -> tuple[float, bool]:
        """(used ratio of the data dir's filesystem, whether writes are refused for space)."""
        try:
            used = self.space.used_ratio()
        except OSError:
            used = 0.0
        return used, self.space.full

    def is_quarantined(self, phys: int) -> bool:
        return phys in self.quarantine

    def quarantined(self) -> dict[int, str]:
        """CommitLog offset -> why, of every corrupt entry found (served to no client)."""
        return dict(self.quarantine.entries)

    def verify(self) -> int:
        """Walk the whole CommitLog, checking every entry's body CRC; corrupt ones are quarantined.
        Returns the number of entries checked (`--verify` at start)."""
        with self._lock:
            upto = self.commitlog.end
        return verify(self.commitlog, self.quarantine, upto)

    # ------------------------------------------------------------------ reading by queue

    def min_offset(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queues.queues.get((topic, queue_id))
        return cq.min_offset if cq else 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queues.queues.get((topic, queue_id))
        return cq.max_offset if cq else 0

    def queues(self, topic: str) -> list[int]:
        """Queue ids of `topic` that have a ConsumeQueue."""
        return self.consume_queues.of_topic(topic)

    def units(self, topic: str, queue_id: int, start: int, max_count: int) -> list[tuple[int, int, int]]:
        cq = self.consume_queues.queues.get((topic, queue_id))
        if cq is None or max_count <= 0:
            return []
        with self._lock:
            raw = cq.raw(start, max_count)
        return list(UNIT.iter_unpack(raw))

    def entry_end(self, topic: str, queue_id: int, offset: int, phys: int, hi: int) -> int:
        """The first offset in (offset, hi] whose unit points past the entry at `phys`: the units of
        an inner batch share their phys, and phys grows along a queue, so a binary search finds it."""
        cq = self.consume_queues.queues.get((topic, queue_id))
        if cq is None:
            return hi
        with self._lock:
            return cq.first_at_or_after(offset + 1, hi, lambda p, _s, _c: p != phys)

    def read(self, topic: str, queue_id: int, start: int, max_count: int = 32, max_bytes: int = 4 << 20,
             tag_filter=None, raw: bool = False, end: int | None = None) -> ReadResult:
        """Messages from logical offset `start` (below `end`, e.g. a last stable offset): at most `max_count`
        entries and about `max_bytes` (always at least one). An inner batch is one entry, at its first
        offset. `raw`: plain entries come back undecoded, for a forwarding reader (CommitLog.entry)."""
        cq = self.consume_queues.queues.get((topic, queue_id))
        if cq is None:
            return ReadResult([], 0, 0, 0)
        lo, hi = cq.min_offset, cq.max_offset
        if start < lo:
            return ReadResult([], lo, lo, hi)
        if start >= hi:
            return ReadResult([], hi, lo, hi)
        entries, total, off, included, stop_at = [], 0, start, -1, hi if end is None else min(hi, end)
        cl = self.commitlog
        cl_begin = cl.begin
        step = max(16, min(max_count, 1024))
        runs = cl.runs(raw)
        while off < stop_at:
            with self._lock:
                units = cq.raw(off, min(step, stop_at - off))
            if not units:
                break
            stop = False
            units = list(UNIT.iter_unpack(units))
            for i, (phys, size, code) in enumerate(units):
                if phys == included:
                    off += 1
                    continue
                if size <= 0 or phys < cl_begin or (tag_filter is not None and not tag_filter(code)):
                    off += 1
                    continue
                if len(entries) >= max_count or (entries and total + size > max_bytes):
                    stop = True
                    break
                msg = runs.entry(units, i, max(size, max_bytes - total), max_count - len(entries))
                if msg is None:
                    off += 1
                    continue
                q = msg.queue_offset if (msg.topic == topic and msg.queue_id == queue_id) else off
                entries.append((q, msg))
                total += size
                included = phys
                off += 1
            if stop:
                break
        return ReadResult(entries, off, lo, hi)

    def iterate(self, topic: str, queue_id: int, start: int = 0, end: int | None = None):
        """(queue offset, StoredMessage) of every entry from `start` up to `end` (default: the
        queue's end when called), in order; an inner batch comes once, at its first offset."""
        end = self.max_offset(topic, queue_id) if end is None else end
        off = max(start, self.min_offset(topic, queue_id))
        while off < end:
            result = self.read(topic, queue_id, off, max_count=256)
            for q, msg in result.entries:
                if q < end:
                    yield q, msg
            if result.next_offset <= off:
                return
            off = result.next_offset

    def offset_for_timestamp(self, topic: str, queue_id: int, ts_ms: int) -> int:
        """First logical offset whose store timestamp >= ts_ms (binary search); max_offset if none."""
        cq = self.consume_queues.queues.get((topic, queue_id))
        if cq is None:
            return 0
        cl = self.commitlog

        def at_or_after(phys, size, code):
            if size <= 0 or phys < cl.begin:
                return False
            ts = cl.store_timestamp_at(phys)
            return ts is not None and ts >= ts_ms

        with self._lock:
            return cq.first_at_or_after(cq.min_offset, cq.max_offset, at_or_after)

    def query_by_key(self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0,
                     end_ms: int | None = None) -> list[M.StoredMessage]:
        """Messages of `topic` with KEYS token, UNIQ_KEY or inner-batch key `key`, newest first."""
        if end_ms is None:
            end_ms = int(time.time() * 1000) + 1000
        out = []
        seen = set()
        for phys in self.index.lookup(f"{topic}#{key}", begin_ms, end_ms, max(max_num * 4, 64)):
            if phys in seen:
                continue
            seen.add(phys)
            msg = self.get(phys)
            if msg is None or msg.topic != topic or not (begin_ms <= msg.store_timestamp <= end_ms):
                continue
            p = msg.properties
            if (key in (p.get("KEYS") or "").split(" ") or key == p.get("UNIQ_KEY")
                    or (msg.keys and key in msg.keys)):
                out.append(msg)
                if len(out) >= max_num:
                    break
        return out

    # ------------------------------------------------------------------ config, log start offsets

    def write_config(self, name: str, obj) -> None:
        self._cfg.write(name, obj)

    def read_config(self, name: str, default=None):
        return self._cfg.read(name, default)

    def delete_records(self, topic: str, queue_id: int, offset: int) -> int:
        """Kafka DeleteRecords: offsets below `offset` (at most max_offset) stop being readable; the
        queue's min offset moves up to it. Recorded in config/logStartOffsets.json (re-applied when
        the store recovers; the entries themselves go with retention). Returns the new min offset."""
        with self._lock:
            cq = self.consume_queues.create((topic, queue_id))
            cq.min_offset = max(cq.min_offset, min(offset, cq.max_offset))
            start = cq.min_offset
        table = self.read_config(LOG_STARTS, {}) or {}
        table.setdefault(topic, {})[str(queue_id)] = start
        self.write_config(LOG_STARTS, table)
        return start

    def _apply_log_starts(self) -> None:
        for topic, queues in (self.read_config(LOG_STARTS, {}) or {}).items():
            for qid, start in queues.items():
                cq = self.consume_queues.queues.get((topic, int(qid)))
                if cq is not None:
                    cq.min_offset = max(cq.min_offset, min(int(start), cq.max_offset))

    def _drop_topic(self, topic: str) -> None:
        table = self.read_config(LOG_STARTS, {}) or {}
        if table.pop(topic, None) is not None:
            self.write_config(LOG_STARTS, table)
        # As retention does: detach under the store lock (a moment), remove with no lock held, and let
        # the flusher close the queues if it is fsyncing one of them right now.
        with self._lock:
            queues, directory = self.consume_queues.detach_topic(topic)
        shutil.rmtree(directory, ignore_errors=True)
        self._flusher.retire([cq.seg.close for cq in queues])  # their buffered units go with the topic

    # ------------------------------------------------------------------ durability and retention

    @property
    def flushed_offset(self) -> int:
        return self._flusher.flushed_offset

    def flush(self) -> None:
        """fdatasync the CommitLog (and periodically the derived data and checkpoints); thread-safe."""
        began = self.flush_began = time.monotonic()
        try:
            self._flusher.flush()
        finally:
            self.flush_began, self.last_flush_s = None, time.monotonic() - began
        if self._flush_observer is not None:
            self._flush_observer(self.last_flush_s)

    def set_flush_observer(self, observe) -> None:
        """`observe(seconds)` after every `flush()` (on the flushing thread): metrics."""
        self._flush_observer = observe

    def delete_expired(self, now_ms: int | None = None) -> int:
        """Retention (store.retention): CommitLog files deleted; retries a failed topic-table write."""
        self.topics.persist_if_dirty()
        deleted = delete_expired(self.commitlog, self.consume_queues, self.index, self._lock,
                                 self._flusher, self.config.file_reserved_hours, now_ms)
        if deleted:
            self.quarantine.forget_below(self.commitlog.begin)
        return deleted

    def expiring_before(self, now_ms: int, within_ms: int) -> int:
        """The CommitLog offset below which retention deletes files within `within_ms` of `now_ms`."""
        with self._lock:
            return expiry_cut(self.commitlog, self.config.file_reserved_hours, now_ms + within_ms) or self.commitlog.begin

    def close(self) -> None:
        """Fold the topic journal into topics.json, flush, write the checkpoints, close. Idempotent."""
        self.topics.close()
        with self._write_lock:  # not while an append is writing
            self._flusher.close(self._close_files)

    def _close_files(self) -> None:
        self.consume_queues.close()
        self.index.close()
        self.commitlog.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open(path: str, config: StoreConfig | None = None, *, recover: bool = True) -> Store:  # noqa: A001
    """Create or recover the store in `path`. With `recover=False` the caller adds the dispatchers
    the replay must feed, then calls `recover()` before appending."""
    s = Store(path, config)
    if recover:
        s.recover()
    return s
