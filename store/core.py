"""The store: one CommitLog for all topics, a ConsumeQueue per topic/queue, IndexFiles, checkpoints,
recovery and retention. Layout under the store directory:

    commitlog/<20-digit start offset>        entries in the MessageDecoder layout (codec.remoting.message)
    consumequeue/<topic>/<queueId>/<20-digit> 20-byte units; .checkpoint = CommitLog offset covered
    index/<yyyyMMddHHmmssSSS>                  IndexFiles; .checkpoint likewise
    config/*.json                              topics.json and the other tables, written atomically

The ConsumeQueues and IndexFiles are derived data. Each directory holds its own checkpoint (the
CommitLog offset up to which its files are complete and on disk), so deleting a directory deletes its
checkpoint too, and the next open rebuilds it from the CommitLog.

Threads: appends, reads and retention run on one thread (the event loop); `flush` runs on a worker
thread. `_lock` guards the in-memory ConsumeQueue buffers and the CommitLog write position against
the flusher; `_sync_lock` keeps files from being closed while they are being fsynced.
"""
from __future__ import annotations

import builtins
import logging
import os
import shutil
import struct
import threading
import time
from dataclasses import dataclass

from codec.remoting import message as M
from store.config import ConfigDir, TopicTable, atomic_write
from store.consumequeue import UNIT, UNIT_SIZE, ConsumeQueue
from store.indexfile import IndexService
from store.segments import Segments

log = logging.getLogger("rocketgate.store")

DERIVED_FLUSH_INTERVAL = 0.5  # seconds between ConsumeQueue/IndexFile flushes + checkpoints
_BLANK_MIN = 8  # CommitLog.END_FILE_MIN_BLANK_LENGTH
_SIZE_MAGIC = struct.Struct(">iI")
_TS = struct.Struct(">q")
LOG_STARTS = "logStartOffsets"  # config/logStartOffsets.json: {topic: {queue id: first readable offset}}


class StoreError(Exception):
    """The store cannot do what was asked (the message is fine in principle)."""


class MessageTooLarge(StoreError):
    """Body larger than `max_message_size`."""


@dataclass
class StoreConfig:
    commitlog_file_size: int = 1 << 30
    cq_units_per_file: int = 300_000
    index_slots: int = 5_000_000
    index_entries: int = 20_000_000
    flush: str = "async"  # or "sync"; the store itself only records it, the gateway runs the flusher
    file_reserved_hours: float = 72
    max_message_size: int = 4 << 20
    store_host: tuple = ("127.0.0.1", 10911)


class AppendResult:
    """Where an append went; `end_offset` is the CommitLog offset just past the entry."""

    __slots__ = ("physical_offset", "queue_offset", "count", "size", "store_timestamp", "end_offset", "_host")

    def __init__(self, physical_offset, queue_offset, count, size, store_timestamp, end_offset, host=None):
        self.physical_offset = physical_offset
        self.queue_offset = queue_offset
        self.count = count
        self.size = size
        self.store_timestamp = store_timestamp
        self.end_offset = end_offset
        self._host = host or ("127.0.0.1", 0)

    @property
    def msg_id(self) -> str:
        return M.make_msg_id(self._host[0], self._host[1], self.physical_offset)

    def __repr__(self) -> str:
        return (f"AppendResult(physical_offset={self.physical_offset}, queue_offset={self.queue_offset}, "
                f"count={self.count}, size={self.size}, end_offset={self.end_offset})")


@dataclass
class ReadResult:
    entries: list  # [(queue_offset, StoredMessage)]
    next_offset: int
    min_offset: int
    max_offset: int


def _topic_dir(topic: str) -> str:
    """Directory name of a topic: itself when it is a safe file name, else `~` + hex of its UTF-8."""
    if topic and topic not in (".", "..") and "/" not in topic and "\0" not in topic \
            and not topic.startswith("~") and len(topic.encode()) <= 200:
        return topic
    return "~" + topic.encode().hex()


def _dir_topic(name: str) -> str:
    return bytes.fromhex(name[1:]).decode() if name.startswith("~") else name


def _read_checkpoint(path: str) -> int:
    try:
        with builtins.open(path, "rb") as f:
            return int(f.read().decode())
    except (OSError, ValueError):
        return -1


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
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._closed = False
        self._listeners: list = []
        self._host = (config.store_host[0], int(config.store_host[1]))
        self._host_ip = M._ip4(self._host[0])
        self._file_size = config.commitlog_file_size
        self._max_body = config.max_message_size
        self._last_ts = 0
        self._last_derived_flush = 0.0
        self._cq_dir = os.path.join(path, "consumequeue")
        self._index_dir = os.path.join(path, "index")
        self._cfg = ConfigDir(os.path.join(path, "config"))
        self.topics = TopicTable(self._cfg, on_delete=self._drop_topic)
        self.commitlog = Segments(os.path.join(path, "commitlog"), self._file_size)
        self._cqs: dict[tuple[str, int], ConsumeQueue] = {}
        os.makedirs(self._cq_dir, exist_ok=True)
        for tname in os.listdir(self._cq_dir):
            tdir = os.path.join(self._cq_dir, tname)
            if tname.startswith(".") or not os.path.isdir(tdir):
                continue
            try:
                topic = _dir_topic(tname)
            except ValueError:
                continue
            for qname in os.listdir(tdir):
                if qname.isdigit():
                    self._cqs[(topic, int(qname))] = ConsumeQueue(
                        os.path.join(tdir, qname), topic, int(qname), config.cq_units_per_file)
        self.index = IndexService(self._index_dir, config.index_slots, config.index_entries)
        self._recover()
        self._apply_log_starts()
        self.commitlog.synced = self.commitlog.begin
        self.flushed_offset = self.commitlog.sync()

    # ------------------------------------------------------------------ recovery

    def _recover(self) -> None:
        """Validate the CommitLog from the older checkpoint, cut a bad tail, re-dispatch past the checkpoints."""
        cl = self.commitlog
        end = cl.end
        cq_ck = self._checkpoint(os.path.join(self._cq_dir, ".checkpoint"))
        ix_ck = self._checkpoint(os.path.join(self._index_dir, ".checkpoint"))
        for cq in self._cqs.values():
            dropped = cq.truncate_phys(cq_ck)
            if dropped:
                log.info("recovery: %s/%d: re-dispatching %d units past the checkpoint", cq.topic, cq.queue_id, dropped)
        pos = min(cq_ck, ix_ck)
        scanned = 0
        chunk, chunk_at = b"", 0
        reason = None
        fs = self._file_size
        while pos < end:
            fstart = pos - pos % fs
            if fstart not in cl.fds:
                reason = "missing CommitLog file"
                break
            if not (chunk_at <= pos and pos + _BLANK_MIN <= chunk_at + len(chunk)):
                chunk, chunk_at = cl.read(pos, min(4 << 20, fstart + fs - pos)), pos
            if pos + _BLANK_MIN > chunk_at + len(chunk):
                reason = "torn entry header"
                break
            size, magic = _SIZE_MAGIC.unpack_from(chunk, pos - chunk_at)
            if magic == M.BLANK_MAGIC and size == fstart + fs - pos:
                pos = fstart + fs
                continue
            if magic != M.MAGIC_V1:
                reason = f"bad magic code 0x{magic:08x}"
                break
            if size < M.FIXED_SIZE or pos + size > fstart + fs:
                reason = f"bad entry size {size}"
                break
            if pos + size > chunk_at + len(chunk):
                chunk, chunk_at = cl.read(pos, max(size, min(4 << 20, fstart + fs - pos))), pos
                if len(chunk) < size:
                    reason = "torn entry"
                    break
            try:
                msg = M.decode(chunk, pos - chunk_at)
            except M.MessageFormatError as exc:
                reason = str(exc)
                break
            if M.body_crc(msg.body) != msg.body_crc:
                reason = "body CRC mismatch"
                break
            if msg.physical_offset != pos:
                reason = f"entry says it is at {msg.physical_offset}"
                break
            if pos >= cq_ck:
                self._redispatch(msg)
            if pos >= ix_ck:
                keys = M.index_keys(msg.topic, msg.properties, msg.keys)
                if keys:
                    self.index.put(keys, pos, msg.store_timestamp)
            self._last_ts = max(self._last_ts, msg.store_timestamp)
            scanned += 1
            pos += size
        if pos < end:
            log.warning("recovery: cut the CommitLog at offset %d (%s): dropped %d bytes up to %d",
                        pos, reason, end - pos, end)
            cl.truncate(pos)
        elif pos > end:  # the last file ended with a blank marker
            cl.end = pos
        if scanned:
            log.info("recovery: validated %d entries from offset %d", scanned, min(cq_ck, ix_ck))
        for cq in self._cqs.values():
            cq.advance_min(cl.begin)

    def _checkpoint(self, path: str) -> int:
        """Where to start re-dispatching for the directory of `path`: its checkpoint, or the start of
        the CommitLog without one, or the start of the last file if the CommitLog is shorter than the
        checkpoint says (its tail was lost: validate the last file again)."""
        cl = self.commitlog
        ck = _read_checkpoint(path)
        if ck > cl.end:
            ck = cl.file_start(max(cl.end - 1, 0))
        return max(ck, cl.begin)

    def _redispatch(self, msg: M.StoredMessage) -> None:
        """Recovery's dispatch: the unit(s) go at the queue offset the entry itself records."""
        cq = self._cq((msg.topic, msg.queue_id))
        q = msg.queue_offset
        if q < cq.max_offset:
            return  # already there (can only happen after a topic was deleted and re-created)
        if q > cq.max_offset:
            if cq.max_offset == cq.min_offset:
                cq.start_at(q)
            else:
                log.warning("recovery: %s/%d: gap of %d offsets before %d", msg.topic, msg.queue_id,
                            q - cq.max_offset, q)
                gap = q - cq.max_offset
                cq.put(bytes(UNIT_SIZE) * gap, gap)
        cq.put(self._units(msg, msg.physical_offset, msg.size), msg.batch_count)

    # ------------------------------------------------------------------ appending

    def _cq(self, key: tuple[str, int]) -> ConsumeQueue:
        cq = self._cqs.get(key)
        if cq is None:
            topic, qid = key
            if not (isinstance(qid, int) and 0 <= qid < 1 << 31):
                raise StoreError(f"bad queue id {qid!r}")
            cq = ConsumeQueue(os.path.join(self._cq_dir, _topic_dir(topic), str(qid)), topic, qid,
                              self.config.cq_units_per_file)
            self._cqs[key] = cq
        return cq

    @staticmethod
    def _units(msg: M.Message, phys: int, size: int) -> bytes:
        """The ConsumeQueue units of one entry: N equal units are one pack times N (the Kafka hot path)."""
        codes = msg.tags_codes
        n = msg.batch_count
        if not codes:
            props = msg.properties
            return UNIT.pack(phys, size, M.tags_code_of(props) if props else 0) * n
        if codes.count(codes[0]) == n:
            return UNIT.pack(phys, size, codes[0]) * n
        return b"".join([UNIT.pack(phys, size, c) for c in codes])

    def _prepare(self, msg: M.Message) -> tuple:
        """Validate one message; (topic field, properties field, entry size). Raises before any state
        changes (the queue id is checked when its ConsumeQueue is created, the entry size against the
        file size where it does not fit the current file)."""
        if len(msg.body) > self._max_body:
            raise MessageTooLarge(f"body of {len(msg.body)} bytes > max_message_size {self._max_body}")
        n = msg.batch_count
        if n != 1:
            if n < 1:
                raise StoreError("batch_count must be >= 1")
            if msg.tags_codes and len(msg.tags_codes) != n:
                raise StoreError(f"tags_codes has {len(msg.tags_codes)} codes for batch_count {n}")
        try:
            return M.prepare(msg)
        except M.MessageFormatError as exc:
            raise StoreError(str(exc)) from exc

    def append(self, msg: M.Message) -> AppendResult:
        return self.append_many((msg,))[0]

    def append_many(self, msgs) -> list[AppendResult]:
        """Append messages in one CommitLog write, then dispatch them; all or nothing on bad input."""
        if self._closed:
            raise StoreError("store is closed")
        if not isinstance(msgs, (list, tuple)):
            msgs = list(msgs)
        fs = self._file_size
        host_ip, host_port, host = self._host_ip, self._host[1], self._host
        prepare, pack_header, cqs, units = self._prepare, M.pack_header, self._cqs, self._units
        pack_unit, tags_code_of = UNIT.pack, M.tags_code_of
        with self._lock:
            cl = self.commitlog
            start = pos = cl.end
            now = int(time.time() * 1000)
            ts = self._last_ts = max(now, self._last_ts)
            parts = []
            results = []
            queues: dict = {}  # (topic, qid) -> [next offset, [packed units]]
            to_index = []
            try:
                for msg in msgs:
                    topic_f, props_f, size = prepare(msg)
                    room = fs - pos % fs
                    if size + _BLANK_MIN > room:  # does not fit: blank out the rest of this file
                        if size + _BLANK_MIN > fs:
                            raise StoreError(f"entry of {size} bytes does not fit a CommitLog file")
                        parts.append(M.BLANK.pack(room, M.BLANK_MAGIC) + bytes(room - _BLANK_MIN))
                        pos += room
                    key = (msg.topic, msg.queue_id)
                    acc = queues.get(key)
                    if acc is None:
                        acc = queues[key] = [(cqs.get(key) or self._cq(key)).max_offset, []]
                    q = acc[0]
                    n = msg.batch_count
                    acc[0] = q + n
                    props = msg.properties
                    if msg.tags_codes:
                        acc[1].append(units(msg, pos, size))
                    else:  # the common case, inline: one unit (times n for an inner batch)
                        unit = pack_unit(pos, size, tags_code_of(props) if props else 0)
                        acc[1].append(unit * n if n != 1 else unit)
                    parts += (pack_header(msg, size, q, pos, ts, host_ip, host_port), msg.body, topic_f, props_f)
                    results.append(AppendResult(pos, q, n, size, ts, pos + size, host))
                    if msg.keys or (props and ("KEYS" in props or "UNIQ_KEY" in props)):
                        to_index.append((msg, pos))
                    pos += size
            except (struct.error, TypeError, ValueError, AttributeError) as exc:  # nothing written yet
                raise StoreError(f"cannot store message: {exc}") from exc
            try:
                cl.write_parts(start, parts)
            except OSError as exc:  # nothing was dispatched yet: the next append overwrites
                cl.end = start
                raise StoreError(f"CommitLog write failed: {exc}") from exc
            for key, (nxt, packed) in queues.items():
                cq = cqs[key]
                cq.put(packed[0] if len(packed) == 1 else b"".join(packed), nxt - cq.max_offset)
            for msg, phys in to_index:
                self.index.put(M.index_keys(msg.topic, msg.properties, msg.keys), phys, ts)
        if self._listeners:
            for (topic, qid), (nxt, _) in queues.items():
                self._notify(topic, qid, nxt)
        return results

    def append_units(self, topic: str, queue_id: int, units) -> int:
        """Append ConsumeQueue units `[(phys, size, tags_code)]` that point at existing entries (views
        over other topics); notifies listeners; returns the queue's next offset. Recovery does not
        rebuild such units (the entries name their own topic): their owner re-derives them."""
        units = list(units)
        if not units:
            return self.max_offset(topic, queue_id)
        raw = b"".join([UNIT.pack(*u) for u in units])
        with self._lock:
            cq = self._cq((topic, queue_id))
            cq.put(raw, len(units))
            nxt = cq.max_offset
        self._notify(topic, queue_id, nxt)
        return nxt

    def _notify(self, topic: str, queue_id: int, nxt: int) -> None:
        for fn in self._listeners:
            try:
                fn(topic, queue_id, nxt)
            except Exception:  # a listener's bug must not fail the append
                log.exception("store listener failed")

    def add_listener(self, fn) -> None:
        """`fn(topic, queue_id, next_offset)` after each dispatch, on the appending thread."""
        self._listeners.append(fn)

    # ------------------------------------------------------------------ reading

    @property
    def max_physical_offset(self) -> int:
        return self.commitlog.end

    @property
    def min_physical_offset(self) -> int:
        return self.commitlog.begin

    def read_entry(self, phys: int, size: int) -> bytes:
        if phys < self.commitlog.begin or phys + size > self.commitlog.end:
            return b""
        try:
            return self.commitlog.read(phys, size)
        except OSError:
            return b""

    def open_entry_range(self, phys: int, size: int) -> tuple[int, int] | None:
        """(fd, offset in its file) of CommitLog bytes [phys, phys + size), for zero-copy sends; the
        caller closes the fd. None when the range is not stored whole in one file."""
        if phys < self.commitlog.begin or phys + size > self.commitlog.end:
            return None
        return self.commitlog.open_range(phys, size)

    def get(self, phys: int) -> M.StoredMessage | None:
        """Decode the entry at CommitLog offset `phys`, None if there is none."""
        cl = self.commitlog
        if phys < cl.begin or phys + M.FIXED_SIZE > cl.end:
            return None
        try:
            buf = cl.read(phys, 4096)
            if len(buf) < 8:
                return None
            size, magic = _SIZE_MAGIC.unpack_from(buf)
            if magic != M.MAGIC_V1 or size < M.FIXED_SIZE or phys + size > cl.end:
                return None
            if size > len(buf):
                buf = cl.read(phys, size)
            return M.decode(buf[:size] if len(buf) > size else buf)
        except (OSError, M.MessageFormatError):
            return None

    def _decode_at(self, phys: int, size: int) -> M.StoredMessage | None:
        """Decode an entry whose size the ConsumeQueue gave (one pread)."""
        try:
            return M.decode(self.read_entry(phys, size))
        except M.MessageFormatError:
            return None

    def min_offset(self, topic: str, queue_id: int) -> int:
        cq = self._cqs.get((topic, queue_id))
        return cq.min_offset if cq else 0

    def max_offset(self, topic: str, queue_id: int) -> int:
        cq = self._cqs.get((topic, queue_id))
        return cq.max_offset if cq else 0

    def queues(self, topic: str) -> list[int]:
        """Queue ids of `topic` that have a ConsumeQueue."""
        return sorted(q for (t, q) in self._cqs if t == topic)

    def units(self, topic: str, queue_id: int, start: int, max_count: int) -> list[tuple[int, int, int]]:
        cq = self._cqs.get((topic, queue_id))
        if cq is None or max_count <= 0:
            return []
        with self._lock:
            raw = cq.raw(start, max_count)
        return list(UNIT.iter_unpack(raw))

    def entry_end(self, topic: str, queue_id: int, offset: int, phys: int, hi: int) -> int:
        """The first offset in (offset, hi] whose unit points past the entry at `phys`: the units of
        an inner batch share their phys, and phys grows along a queue, so a binary search finds it."""
        cq = self._cqs.get((topic, queue_id))
        if cq is None:
            return hi
        with self._lock:
            return cq.first_at_or_after(offset + 1, hi, lambda p, _s, _c: p != phys)

    def read(self, topic: str, queue_id: int, start: int, max_count: int = 32, max_bytes: int = 4 << 20,
             tag_filter=None) -> ReadResult:
        """Messages from logical offset `start`: at most `max_count` entries and about `max_bytes`
        (always at least one entry). An inner batch is one entry, reported at its first offset."""
        cq = self._cqs.get((topic, queue_id))
        if cq is None:
            return ReadResult([], 0, 0, 0)
        lo, hi = cq.min_offset, cq.max_offset
        if start < lo:
            return ReadResult([], lo, lo, hi)
        if start >= hi:
            return ReadResult([], hi, lo, hi)
        entries = []
        total = 0
        off = start
        included = -1
        cl_begin = self.commitlog.begin
        step = max(16, min(max_count, 1024))
        while off < hi:
            with self._lock:
                raw = cq.raw(off, step)
            if not raw:
                break
            stop = False
            for phys, size, code in UNIT.iter_unpack(raw):
                if phys == included:
                    off += 1
                    continue
                if size <= 0 or phys < cl_begin or (tag_filter is not None and not tag_filter(code)):
                    off += 1
                    continue
                if len(entries) >= max_count or (entries and total + size > max_bytes):
                    stop = True
                    break
                msg = self._decode_at(phys, size)
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
        cq = self._cqs.get((topic, queue_id))
        if cq is None:
            return 0
        cl = self.commitlog

        def at_or_after(phys, size, code):
            if size <= 0 or phys < cl.begin:
                return False
            raw = cl.read(phys + M.STORE_TS_AT, 8)
            return len(raw) == 8 and _TS.unpack(raw)[0] >= ts_ms

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

    # ------------------------------------------------------------------ config

    def write_config(self, name: str, obj) -> None:
        self._cfg.write(name, obj)

    def read_config(self, name: str, default=None):
        return self._cfg.read(name, default)

    # ------------------------------------------------------------------ log start offsets

    def delete_records(self, topic: str, queue_id: int, offset: int) -> int:
        """Kafka DeleteRecords: offsets below `offset` (at most max_offset) stop being readable; the
        queue's min offset moves up to it. Recorded in config/logStartOffsets.json (re-applied at
        open; the entries themselves go with retention). Returns the new min offset."""
        with self._lock:
            cq = self._cq((topic, queue_id))
            cq.min_offset = max(cq.min_offset, min(offset, cq.max_offset))
            start = cq.min_offset
        table = self.read_config(LOG_STARTS, {}) or {}
        table.setdefault(topic, {})[str(queue_id)] = start
        self.write_config(LOG_STARTS, table)
        return start

    def _apply_log_starts(self) -> None:
        for topic, queues in (self.read_config(LOG_STARTS, {}) or {}).items():
            for qid, start in queues.items():
                cq = self._cqs.get((topic, int(qid)))
                if cq is not None:
                    cq.min_offset = max(cq.min_offset, min(int(start), cq.max_offset))

    def _drop_topic(self, topic: str) -> None:
        table = self.read_config(LOG_STARTS, {}) or {}
        if table.pop(topic, None) is not None:
            self.write_config(LOG_STARTS, table)
        with self._sync_lock, self._lock:
            for key in [k for k in self._cqs if k[0] == topic]:
                cq = self._cqs.pop(key)
                cq.close()
            shutil.rmtree(os.path.join(self._cq_dir, _topic_dir(topic)), ignore_errors=True)

    # ------------------------------------------------------------------ durability

    def flush(self) -> None:
        """fdatasync the CommitLog up to everything written (group commit: one call serves all waiters);
        every DERIVED_FLUSH_INTERVAL also the ConsumeQueues and IndexFiles, then the checkpoints."""
        with self._sync_lock:
            if self._closed:
                return
            self.flushed_offset = self.commitlog.sync()
            if time.monotonic() - self._last_derived_flush >= DERIVED_FLUSH_INTERVAL:
                self._flush_derived()

    def _flush_derived(self) -> None:
        """Called with _sync_lock held."""
        with self._lock:
            covered = min(self.commitlog.end, self.flushed_offset)  # every entry before it is dispatched
            for cq in self._cqs.values():
                cq.drain()
            cqs = list(self._cqs.values())
        for cq in cqs:
            cq.seg.sync()
        self.index.flush()
        atomic_write(os.path.join(self._cq_dir, ".checkpoint"), b"%d" % covered)
        atomic_write(os.path.join(self._index_dir, ".checkpoint"), b"%d" % covered)
        self._last_derived_flush = time.monotonic()

    def delete_expired(self, now_ms: int | None = None) -> int:
        """Retention: delete CommitLog files (never the one being written) last modified more than
        `file_reserved_hours` ago, oldest first; ConsumeQueue min offsets follow. Returns files deleted."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        keep_ms = self.config.file_reserved_hours * 3600_000
        with self._sync_lock, self._lock:
            cl = self.commitlog
            cut = None
            for start in cl.starts[:-1]:
                if cl.mtime(start) * 1000 + keep_ms < now_ms:
                    cut = start + self._file_size
                else:
                    break
            if cut is None:
                return 0
            gone = cl.remove_before(cut)
            for cq in self._cqs.values():
                cq.advance_min(cl.begin)
            self.index.remove_before(cl.begin)
        log.info("retention: deleted %d CommitLog files, now starting at %d", len(gone), cl.begin)
        return len(gone)

    def close(self) -> None:
        """Flush everything, write the checkpoints, close the files. Idempotent."""
        with self._sync_lock:
            if self._closed:
                return
            self.flushed_offset = self.commitlog.sync()
            self._flush_derived()
            self._closed = True
            with self._lock:
                for cq in self._cqs.values():
                    cq.close()
                self.index.close()
                self.commitlog.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open(path: str, config: StoreConfig | None = None) -> Store:  # noqa: A001 - the contract's name
    """Create or recover the store in `path`."""
    return Store(path, config)
