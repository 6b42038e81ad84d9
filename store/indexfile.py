"""IndexFile: a hash map on disk from `topic#key` to CommitLog offsets (RocketMQ's layout).

    header (40 B): beginTimestamp i64, endTimestamp i64, beginPhyOffset i64, endPhyOffset i64,
                   hashSlotCount i32, indexCount i32
    slots (4 B each): index number of the newest entry in that slot's chain (0 = empty)
    entries (20 B each): keyHash i32, phyOffset i64, timeDiff i32 (s since beginTimestamp), prevIndex i32

Files are named by the creation time `yyyyMMddHHmmssSSS`. Entries are derived data: recovery
re-indexes from the CommitLog, and queries check every hit against the entry it points to, so
duplicates or stale entries after a crash do no harm.

mmap here (not in the CommitLog): slot updates are small random writes all over the file.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import struct
import time

from codec.remoting.message import java_hash

HEADER = struct.Struct(">qqqqii")
log = logging.getLogger("rocketgate.store")

HEADER_SIZE = 40
SLOT = struct.Struct(">i")
ENTRY = struct.Struct(">iqii")
ENTRY_SIZE = 20
RESERVE_AHEAD = 1 << 20  # entry bytes allocated ahead of the writes


def key_hash(key: str) -> int:
    """IndexFile.indexKeyHashMethod: abs(String.hashCode), 0 for Integer.MIN_VALUE."""
    h = abs(java_hash(key))
    return 0 if h > 0x7FFFFFFF else h


def _name(ms: int) -> str:
    t = time.gmtime(ms // 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{ms % 1000:03d}"


class IndexFile:
    def __init__(self, path: str, slots: int, entries: int, create: bool) -> None:
        self.path = path
        self.size = HEADER_SIZE + slots * SLOT.size + entries * ENTRY_SIZE
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if create:
                os.ftruncate(self.fd, self.size)
            else:
                self.size = os.fstat(self.fd).st_size
            self.mm = mmap.mmap(self.fd, self.size)
        except BaseException:
            os.close(self.fd)
            raise
        (self.begin_ts, self.end_ts, self.begin_phys, self.end_phys, self.used_slots,
         self.count) = HEADER.unpack_from(self.mm, 0)
        if create or self.count <= 0:
            self.count = 1  # entry 0 is never used: slot value 0 means empty
            self.used_slots = 0
        self.slots = slots
        self.entries = entries
        self.entries_at = HEADER_SIZE + self.slots * SLOT.size
        # A file written with other sizes: derive its entry capacity from its length.
        cap = (self.size - self.entries_at) // ENTRY_SIZE
        if cap < self.entries:
            self.entries = max(cap, 0)
        self.count = min(self.count, self.entries)
        self.dirty = False
        # Blocks are allocated for real before any page of the mapping is written (the header and
        # slots now, entries RESERVE_AHEAD at a time), so a full disk is an OSError here or in
        # `put`, never a SIGBUS. The file stays sparse past what is reserved.
        self._reserved = 0
        try:
            self._reserve(self.entries_at + (self.count + 1) * ENTRY_SIZE)
        except OSError:
            if create:
                self.close()
                with contextlib.suppress(OSError):
                    os.unlink(path)
                raise
            log.warning("index: cannot allocate %s: it is read-only from now on", path)
            self.count = self.entries  # full: never written again

    def _reserve(self, upto: int) -> None:
        if upto > self._reserved:
            target = min(self.size, upto + RESERVE_AHEAD)
            try:
                os.posix_fallocate(self.fd, self._reserved, target - self._reserved)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
            self._reserved = target

    @property
    def full(self) -> bool:
        return self.count >= self.entries

    def put(self, key: str, phys: int, store_ts: int) -> None:
        self._reserve(self.entries_at + (self.count + 1) * ENTRY_SIZE)  # OSError (disk full) before writing
        h = key_hash(key)
        slot_at = HEADER_SIZE + (h % self.slots) * SLOT.size
        mm = self.mm
        (prev,) = SLOT.unpack_from(mm, slot_at)
        if prev <= 0 or prev >= self.count:
            prev = 0
            self.used_slots += 1
        if self.count == 1:
            self.begin_ts, self.begin_phys = store_ts, phys
        diff = max(0, (store_ts - self.begin_ts) // 1000)
        ENTRY.pack_into(mm, self.entries_at + self.count * ENTRY_SIZE, h, phys, min(diff, 0x7FFFFFFF), prev)
        SLOT.pack_into(mm, slot_at, self.count)
        self.count += 1
        self.end_ts, self.end_phys = store_ts, phys
        HEADER.pack_into(mm, 0, self.begin_ts, self.end_ts, self.begin_phys, self.end_phys,
                         self.used_slots, self.count)
        self.dirty = True

    def lookup(self, key: str, begin_ms: int, end_ms: int, limit: int) -> list[int]:
        """CommitLog offsets of entries whose hash matches `key` in the time range, newest first."""
        h = key_hash(key)
        mm = self.mm
        (idx,) = SLOT.unpack_from(mm, HEADER_SIZE + (h % self.slots) * SLOT.size)
        out = []
        seen = 0
        while 0 < idx < self.count and len(out) < limit and seen < self.entries:
            eh, phys, diff, prev = ENTRY.unpack_from(mm, self.entries_at + idx * ENTRY_SIZE)
            ts = self.begin_ts + diff * 1000
            if eh == h and begin_ms <= ts + 999 and ts <= end_ms:
                out.append(phys)
            if prev >= idx:
                break  # chains always point backwards; anything else is damage
            idx = prev
            seen += 1
        return out

    def flush(self) -> None:
        """Write the mapping's dirty pages (fdatasync of the file: on Linux a shared mapping's writes
        are the file's page cache, so this is msync's MS_SYNC; unlike mmap.flush it releases the GIL,
        so the event loop keeps running while the index is written back), then drop the pages from
        this process's mapping: they stay in the page cache, and the process's memory does not grow
        with the index (a fault brings a page back)."""
        if self.dirty:
            self.dirty = False
            os.fdatasync(self.fd)
            if hasattr(mmap, "MADV_DONTNEED"):
                self.mm.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        self.mm.close()
        os.close(self.fd)


class IndexService:
    """The index directory: files in creation order, the last one written to."""

    def __init__(self, directory: str, slots: int, entries: int, on_space_error=None) -> None:
        self.dir = directory
        self._on_space_error = on_space_error  # called with the OSError when a new file cannot be allocated
        self._skipped = 0
        self.slot_num = slots
        self.entry_num = entries
        os.makedirs(directory, exist_ok=True)
        self.files: list[IndexFile] = []
        names = [n for n in sorted(os.listdir(directory)) if len(n) == 17 and n.isdigit()]
        if any(os.path.getsize(os.path.join(directory, n)) < HEADER_SIZE for n in names):
            # A crash between creating a file and sizing it leaves it empty. The index is derived
            # data: drop it with its checkpoint so recovery rebuilds it from the CommitLog.
            log.warning("index: torn index file found, rebuilding the index from the CommitLog")
            for n in names + [".checkpoint"]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(directory, n))
            names = []
        for name in names:
            self.files.append(IndexFile(os.path.join(directory, name), slots, entries, create=False))
        self._last_name = max((int(f.path[-17:]) for f in self.files), default=0)

    def _new_file(self, now_ms: int) -> IndexFile:
        name = max(int(_name(now_ms)), self._last_name + 1)
        self._last_name = name
        f = IndexFile(os.path.join(self.dir, f"{name:017d}"), self.slot_num, self.entry_num, create=True)
        self.files.append(f)
        return f

    def put(self, keys, phys: int, store_ts: int) -> None:
        """Index `keys` of the entry at `phys`. When a new file cannot be allocated (disk full) the
        keys are not indexed (the entry itself is stored and readable; queries by key miss it),
        logged once per run of failures, and the store is told so that it refuses writes."""
        f = self.files[-1] if self.files else None
        try:
            for key in keys:
                if f is None or f.full:
                    f = self._new_file(store_ts)
                f.put(key, phys, store_ts)
        except OSError as exc:
            if not self._skipped:
                log.error("index: cannot allocate index space (%s): keys are not indexed", exc)
            self._skipped += 1
            if self._on_space_error is not None:
                self._on_space_error(exc)
            return
        if self._skipped:
            log.warning("index: indexing again (%d entries were not indexed)", self._skipped)
            self._skipped = 0

    def lookup(self, key: str, begin_ms: int, end_ms: int, limit: int) -> list[int]:
        out = []
        for f in reversed(self.files):
            if f.count <= 1 or f.end_ts < begin_ms - 1000 or f.begin_ts > end_ms:
                continue
            out.extend(f.lookup(key, begin_ms, end_ms, limit - len(out)))
            if len(out) >= limit:
                break
        return out

    def flush(self) -> None:
        for f in list(self.files):
            f.flush()

    def detach_before(self, commitlog_min: int) -> list[IndexFile]:
        """Forget the files (never the last) whose every entry points below `commitlog_min`; the
        caller unlinks and closes them (retention, outside the store's locks)."""
        gone = []
        while len(self.files) > 1 and self.files[0].end_phys < commitlog_min:
            gone.append(self.files.pop(0))
        return gone

    def close(self) -> None:
        for f in self.files:
            f.flush()
            f.close()
        self.files.clear()
