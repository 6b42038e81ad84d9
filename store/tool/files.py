"""Read-only access to a data dir's CommitLog, ConsumeQueues and IndexFiles through mmap (a live
gateway's appends past the mapped length are simply not seen), and the CommitLog walk that dump
and verify share: each position is an entry, a blank marker, or damage, reported as found."""
from __future__ import annotations

import json
import mmap
import os
import time

from construct import ConstructError

from codec.formats.store import Checkpoint
from codec.remoting import message as M
from store.commitlog import SIZE_MAGIC
from store.consumequeue import UNIT, UNIT_SIZE, queue_dirs

# The bulk reads use the hot path's precompiled structs (EntryHead and ConsumeQueueUnit of
# codec.formats, held to them by tests/formats): a construct parse per unit would be ~20x slower.


def _map(path: str):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        return mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) if size else b""


def _numbered(directory: str, digits: int) -> list[tuple[int, str]]:
    if not os.path.isdir(directory):
        return []
    return sorted((int(n), os.path.join(directory, n)) for n in os.listdir(directory)
                  if len(n) == digits and n.isdigit())


def checkpoint(directory: str) -> int | None:
    try:
        with open(os.path.join(directory, ".checkpoint"), "rb") as f:
            return Checkpoint.parse(f.read())
    except (OSError, ValueError, ConstructError):
        return None


class Progress:
    """A line on stderr now and then: bytes done of the total, MB/s."""

    def __init__(self, total: int, out=None, every_s: float = 2.0) -> None:
        self.total, self.out, self.every = total, out, every_s
        self.began = self.last = time.monotonic()

    def __call__(self, done: int, what: str = "CommitLog") -> None:
        now = time.monotonic()
        if self.out is not None and now - self.last >= self.every:
            self.last = now
            rate = done / max(now - self.began, 1e-9) / 1e6
            self.out.write(f"{what}: {done / 1e6:,.0f} of {self.total / 1e6:,.0f} MB "
                           f"({100 * done / max(self.total, 1):.0f}%), {rate:,.0f} MB/s\n")
            self.out.flush()


class CommitLogFiles:
    """The CommitLog's files (mapped read-only); `file_size` from the spacing of their names when
    there are two or more, else from a blank marker, else `default_size`."""

    def __init__(self, data_dir: str, default_size: int = 1 << 30) -> None:
        self.files = [(start, _map(path)) for start, path in _numbered(os.path.join(data_dir, "commitlog"), 20)]
        starts = [s for s, _ in self.files]
        gaps = {b - a for a, b in zip(starts, starts[1:])}
        self.file_size = min(gaps) if gaps else default_size
        self.begin = starts[0] if starts else 0
        self.end = starts[-1] + len(self.files[-1][1]) if starts else 0
        self._by_start = dict(self.files)

    @property
    def total(self) -> int:
        return sum(len(m) for _, m in self.files)

    def buffer_at(self, phys: int):
        """(mapped file, position in it) of a CommitLog offset, or (None, 0)."""
        start = phys - phys % self.file_size if len(self.files) > 1 else self.begin
        mm = self._by_start.get(start)
        return (mm, phys - start) if mm is not None and 0 <= phys - start < len(mm) else (None, 0)

    def entry(self, phys: int, size: int | None = None):
        """(StoredMessage, None) of the entry at `phys`, or (None, why)."""
        mm, at = self.buffer_at(phys)
        if mm is None:
            return None, "outside the CommitLog"
        if at + 8 > len(mm):
            return None, "torn entry header"
        total, magic = SIZE_MAGIC.unpack_from(mm, at)
        if magic != M.MAGIC_V1:
            return None, f"bad magic code 0x{magic:08x}"
        if size is not None and total != size:
            return None, f"size {total}, the unit says {size}"
        if total < M.FIXED_SIZE or at + total > len(mm):
            return None, f"bad or torn entry of size {total}"
        try:
            return M.decode(mm[at:at + total]), None
        except M.MessageFormatError as exc:
            return None, str(exc)

    def release(self) -> None:
        """Drop the mapped pages from this process (the page cache keeps them): random reads of a
        large store would otherwise show its whole size as this process's resident memory."""
        for _start, mm in self.files:
            if isinstance(mm, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
                mm.madvise(mmap.MADV_DONTNEED)

    def summary(self, phys: int, size: int):
        """(topic, queue id, queue offset, record count, is a rewrite) of the sound-looking entry of
        `size` bytes at `phys` without copying its body, or (None, why): the ConsumeQueue check."""
        mm, at = self.buffer_at(phys)
        if mm is None or at + M.FIXED_SIZE > len(mm):
            return None, "outside the CommitLog"
        h = M.HEADER.unpack_from(mm, at)
        if h[1] != M.MAGIC_V1:
            return None, f"bad magic code 0x{h[1]:08x}"
        if h[0] != size or at + size > len(mm):
            return None, f"size {h[0]}, the unit says {size}"
        p = at + M.HEADER_SIZE + h[16]
        if h[16] < 0 or p + 3 > at + size:
            return None, "bad body length"
        tlen = mm[p]
        try:
            topic = mm[p + 1:p + 1 + tlen].decode()
            props = mm[p + 3 + tlen:at + size]
            count = 1
            if h[7] & M.INNER_BATCH_FLAG:
                count = int(M.string_to_properties(props.decode()).get(M.PROP_INNER_NUM, 1))
        except ValueError as exc:
            return None, f"undecodable entry: {exc}"
        return (topic, h[3], h[5], count, b"REWRITE\x01" in props), None

    def walk(self, start: int | None = None, end: int | None = None, progress=None):
        """Yield (phys, kind, value) in order: ("entry", StoredMessage), ("blank", size) or
        ("damage", why). After damage the rest of that file is skipped (the entry sizes cannot be
        trusted), except for a CRC or offset mismatch, where the size still leads on."""
        start = self.begin if start is None else start
        end = self.end if end is None else end
        done = seen = 0
        for fstart, mm in self.files:
            if fstart + len(mm) <= start or fstart >= end:
                continue
            pos = max(start - fstart, 0) if start > fstart else 0
            released = 0
            while pos < len(mm) and fstart + pos < end:
                phys = fstart + pos
                seen += 1
                if not seen & 1023:
                    if progress is not None:
                        progress(done + pos)
                    released = _release_before(mm, pos, released)
                if pos + 8 > len(mm):
                    yield phys, "damage", f"torn tail: {len(mm) - pos} bytes"
                    break
                size, magic = SIZE_MAGIC.unpack_from(mm, pos)
                if magic == M.BLANK_MAGIC:
                    yield phys, "blank", size
                    break
                if magic != M.MAGIC_V1:
                    what = "torn tail" if not any(mm[pos:pos + 8]) else f"bad magic code 0x{magic:08x}"
                    yield phys, "damage", f"{what}: {len(mm) - pos} bytes unreadable to the end of the file"
                    break
                if size < M.FIXED_SIZE or pos + size > len(mm):
                    why = "torn tail" if pos + size > len(mm) and size >= M.FIXED_SIZE else "bad entry size"
                    yield phys, "damage", f"{why}: entry of {size} bytes, {len(mm) - pos} left in the file"
                    break
                try:
                    msg = M.decode(mm[pos:pos + size])
                except M.MessageFormatError as exc:
                    yield phys, "damage", f"undecodable entry: {exc}"
                    pos += size
                    continue
                if msg.physical_offset != phys:
                    yield phys, "damage", f"entry says it is at {msg.physical_offset}"
                elif M.body_crc(msg.body) != msg.body_crc:
                    yield phys, "damage", "body CRC mismatch"
                else:
                    yield phys, "entry", msg
                pos += size
            done += len(mm)
            if isinstance(mm, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
                mm.madvise(mmap.MADV_DONTNEED)  # as `release`, file by file
        if progress is not None:
            progress(done)


RELEASE_EVERY = 64 << 20


def _release_before(mm, pos: int, released: int) -> int:
    """Drop the pages of `mm` before `pos` from this process once 64 MiB have been read past the
    last drop (`CommitLogFiles.release`, a file at a time); the new drop point."""
    upto = pos - pos % mmap.PAGESIZE
    if upto - released >= RELEASE_EVERY and isinstance(mm, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        mm.madvise(mmap.MADV_DONTNEED, released, upto - released)
        return upto
    return released


class ConsumeQueueFiles:
    """One queue's units, mapped read-only, as one run of 20-byte units from `min_offset`."""

    def __init__(self, directory: str, topic: str, queue_id: int) -> None:
        self.dir, self.topic, self.queue_id = directory, topic, queue_id
        self.files = [(start, _map(path)) for start, path in _numbered(directory, 20)]
        self.min_offset = self.files[0][0] // UNIT_SIZE if self.files else 0
        self.torn = 0
        self.max_offset = self.min_offset
        if self.files:
            last_start, last = self.files[-1]
            self.torn = (last_start + len(last)) % UNIT_SIZE
            self.max_offset = (last_start + len(last)) // UNIT_SIZE

    def units(self, first: int = 0):
        """(queue offset, phys, size, tags code) of every unit from queue offset `first` on."""
        for start, mm in self.files:
            whole = len(mm) - len(mm) % UNIT_SIZE
            skip = min(max(first * UNIT_SIZE - start, 0), whole)
            if skip == whole:
                continue
            base = (start + skip) // UNIT_SIZE
            for i, (phys, size, code) in enumerate(UNIT.iter_unpack(memoryview(mm)[skip:whole])):
                yield base + i, phys, size, code

    def unit(self, offset: int):
        pos = offset * UNIT_SIZE
        for start, mm in reversed(self.files):
            if start <= pos and pos + UNIT_SIZE <= start + len(mm):
                return UNIT.unpack_from(mm, pos - start)
        return None


def consume_queues(data_dir: str) -> dict[tuple[str, int], ConsumeQueueFiles]:
    return {(topic, qid): ConsumeQueueFiles(qdir, topic, qid)
            for topic, qid, qdir in queue_dirs(os.path.join(data_dir, "consumequeue"))}


def config(data_dir: str, name: str, default=None):
    try:
        with open(os.path.join(data_dir, "config", name), "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return default
