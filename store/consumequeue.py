"""ConsumeQueue: per topic/queue, 20-byte units (CommitLog offset i64, size i32, tags code i64).

Unit *n* is logical offset *n*; file `<20-digit byte position>` holds `units_per_file` units.
The queue is derived data: recovery rebuilds it from the CommitLog.
"""
from __future__ import annotations

import logging
import os
import struct

from store.errors import StoreError
from store.segments import Segments

log = logging.getLogger("rocketgate.store")

UNIT = struct.Struct(">qiq")
UNIT_SIZE = UNIT.size  # 20
DRAIN_AT = 64 * 1024
TRUNCATE_SCAN = 4096  # units read per step of truncate_phys


class ConsumeQueue:
    """Units are buffered in memory and written on flush (or every 64 KiB); the caller serializes.

    A unit's queue offset is taken when it is put, whether or not it then reaches the disk: the
    CommitLog entry is already published, so the offset is its own and is never handed out again.
    Units that cannot be written (EMFILE, ENOSPC, EIO) stay buffered, readable, and are written by
    a later drain; until then the checkpoint does not pass them, so recovery rebuilds them."""

    def __init__(self, directory: str, topic: str, queue_id: int, units_per_file: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.dir = directory
        self.seg = Segments(directory, units_per_file * UNIT_SIZE)
        if self.seg.end % UNIT_SIZE:  # a torn unit at the tail
            self.seg.truncate(self.seg.end - self.seg.end % UNIT_SIZE)
        self.max_offset = self.seg.end // UNIT_SIZE
        self.min_offset = self.seg.begin // UNIT_SIZE
        self.pending = bytearray()  # never exported (no memoryview of it): `+=` cannot fail
        self.pending_start = self.max_offset
        self.drain_at = DRAIN_AT  # buffered bytes at which `put` drains
        self.write_error: str | None = None  # why the last drain failed; None once one succeeds

    def put(self, units: bytes, count: int) -> None:
        """Append `count` units (already packed). A failed write is not raised (see the class)."""
        self.pending += units
        self.max_offset += count
        if len(self.pending) >= self.drain_at:
            self.try_drain()

    def try_drain(self) -> bool:
        """`drain`, a failure logged (once per run of failures) instead of raised; True when nothing
        is left buffered. After a failure `put` waits until twice as much is buffered before trying
        again (the flusher tries every interval): a failing disk costs no write per message, and
        the copies the tries make stay linear in what is buffered."""
        try:
            self.drain()
            return True
        except OSError as exc:
            self.drain_at = 2 * len(self.pending)
            if self.write_error is None:
                log.warning("consumequeue %s-%d: write failed (%s); %d units kept in memory, retried",
                            self.topic, self.queue_id, exc, self.max_offset - self.pending_start)
            self.write_error = str(exc)  # the text only: no traceback (and its frames) kept alive
            return False

    def drain(self) -> None:
        """Write the buffered units; an OSError leaves them buffered."""
        if self.pending:
            # A copy: no view of `pending` may outlive a failed write (a traceback kept alive by a
            # reference cycle would hold it, and the next `+=` would raise BufferError).
            self.seg.write(self.pending_start * UNIT_SIZE, bytes(self.pending))
            self.pending = bytearray()
            self.pending_start = self.max_offset
        self.drain_at = DRAIN_AT
        if self.write_error is not None:
            log.warning("consumequeue %s-%d: written again", self.topic, self.queue_id)
            self.write_error = None

    def start_at(self, offset: int) -> None:
        """Make an empty queue begin at logical `offset` (rebuilding after its files were deleted)."""
        self.drain()
        self.seg.truncate(self.seg.begin)
        self.min_offset = self.max_offset = self.pending_start = offset

    def raw(self, start: int, count: int) -> bytes:
        """Packed units [start, start+count), fewer at the end; none if `start` is below min_offset."""
        end = min(start + count, self.max_offset)
        if start < self.min_offset or start >= end:
            return b""
        ps = self.pending_start
        if start >= ps:
            return bytes(self.pending[(start - ps) * UNIT_SIZE:(end - ps) * UNIT_SIZE])
        head = self.seg.read(start * UNIT_SIZE, (min(end, ps) - start) * UNIT_SIZE)
        if end > ps:
            head += self.pending[:(end - ps) * UNIT_SIZE]
        return head

    def unit(self, offset: int) -> tuple[int, int, int] | None:
        raw = self.raw(offset, 1)
        return UNIT.unpack(raw) if len(raw) == UNIT_SIZE else None

    def first_at_or_after(self, lo: int, hi: int, pred) -> int:
        """Smallest offset in [lo, hi) whose unit satisfies the monotone `pred(phys, size, code)`; hi if none."""
        while lo < hi:
            mid = (lo + hi) // 2
            u = self.unit(mid)
            if u is not None and pred(*u):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def replace(self, start: int, end: int, phys: int, size: int) -> None:
        """Point units [start, end) (within the queue) at the entry (phys, size), keeping their tags
        codes: a compacted copy of their entries (`Store.rewrite`)."""
        start, end = max(start, self.min_offset), min(end, self.max_offset)
        if start >= end:
            return
        self.drain()
        old = self.raw(start, end - start)
        self.seg.write(start * UNIT_SIZE, b"".join(UNIT.pack(phys, size, code)
                                                   for _p, _s, code in UNIT.iter_unpack(old)))
        self.seg.synced = min(self.seg.synced, start * UNIT_SIZE)  # the next sync covers this file

    def truncate_phys(self, phys: int) -> int:
        """Drop the trailing units pointing at CommitLog offsets >= `phys` (recovery); returns how
        many went. A scan back from the end, not a binary search: compacted units (`replace`) point
        past older units of the queue."""
        self.drain()
        cut = self.max_offset
        while cut > self.min_offset:
            lo = max(self.min_offset, cut - TRUNCATE_SCAN)
            units = list(UNIT.iter_unpack(self.raw(lo, cut - lo)))
            keep = len(units)
            while keep and units[keep - 1][0] >= phys:
                keep -= 1
            cut = lo + keep
            if keep:
                break
        dropped = self.max_offset - cut
        if dropped:
            self.seg.truncate(cut * UNIT_SIZE)
            self.max_offset = self.pending_start = cut
            self.min_offset = min(self.min_offset, cut)
        return dropped

    def advance_min(self, commitlog_min: int) -> list[tuple[int, int, str]]:
        """Move min_offset to the first unit still backed by the CommitLog; detach the files wholly
        before it and return them (`segments.detach_before`) for the caller to release."""
        self.min_offset = self.first_at_or_after(
            self.min_offset, self.max_offset, lambda p, s, c: p >= commitlog_min and s > 0)
        self.try_drain()  # a failed drain (a full disk: retention is what frees it) must not stop retention
        return self.seg.detach_before(min(self.min_offset, self.pending_start) * UNIT_SIZE)

    def close(self) -> None:
        """Write what is buffered and close the files. Units that cannot be written are logged (one
        line), not raised: the checkpoint does not cover them, so the next start rebuilds them."""
        try:
            self.drain()
        except OSError as exc:
            log.error("consumequeue %s-%d: offsets %d..%d not written at close (%s); the next start "
                      "rebuilds them from the CommitLog", self.topic, self.queue_id, self.pending_start,
                      self.max_offset - 1, exc.strerror or exc)
        self.seg.close()


def topic_dir(topic: str) -> str:
    """Directory name of a topic: itself when it is a safe file name, else `~` + hex of its UTF-8."""
    if topic and topic not in (".", "..") and "/" not in topic and "\0" not in topic \
            and not topic.startswith("~") and len(topic.encode()) <= 200:
        return topic
    return "~" + topic.encode().hex()


def dir_topic(name: str) -> str:
    return bytes.fromhex(name[1:]).decode() if name.startswith("~") else name


def queue_dirs(directory: str):
    """(topic, queue id, path) of every queue directory the store made under `directory`, sorted by
    topic directory; anything else there (dot files, foreign names) is skipped."""
    if not os.path.isdir(directory):
        return
    for tname in sorted(os.listdir(directory)):
        tdir = os.path.join(directory, tname)
        if tname.startswith(".") or not os.path.isdir(tdir):
            continue
        try:
            topic = dir_topic(tname)
        except ValueError:
            continue
        for qname in os.listdir(tdir):
            if qname.isdigit():
                yield topic, int(qname), os.path.join(tdir, qname)

class ConsumeQueueTable:
    """Every ConsumeQueue of the store (`consumequeue/<topic dir>/<queueId>/`), by (topic, queue id).
    The store lock serializes changes; reads of `queues` need no lock."""

    def __init__(self, directory: str, units_per_file: int) -> None:
        self.dir = directory
        self.units_per_file = units_per_file
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        # topic -> its queue ids, sorted; replaced whole (never changed in place), so a reader without
        # the lock sees one or the other; `of_topic` without a scan of every queue (10 000 topics)
        self._by_topic: dict[str, tuple[int, ...]] = {}
        os.makedirs(directory, exist_ok=True)
        for topic, qid, qdir in queue_dirs(directory):
            self.queues[(topic, qid)] = ConsumeQueue(qdir, topic, qid, units_per_file)
            self._by_topic[topic] = tuple(sorted((*self._by_topic.get(topic, ()), qid)))

    def create(self, key: tuple[str, int]) -> ConsumeQueue:
        cq = self.queues.get(key)
        if cq is None:
            topic, qid = key
            if not (isinstance(qid, int) and 0 <= qid < 1 << 31):
                raise StoreError(f"bad queue id {qid!r}")
            cq = ConsumeQueue(os.path.join(self.dir, topic_dir(topic), str(qid)), topic, qid, self.units_per_file)
            self.queues[key] = cq
            self._by_topic[topic] = tuple(sorted((*self._by_topic.get(topic, ()), qid)))
        return cq

    def next_offset(self, key: tuple[str, int]) -> int:
        """The queue offset the next entry of a queue gets (creating the queue)."""
        cq = self.queues.get(key) or self.create(key)
        return cq.max_offset

    def of_topic(self, topic: str) -> list[int]:
        return list(self._by_topic.get(topic, ()))

    def truncate_phys(self, phys: int) -> None:
        """Recovery: drop the units pointing at CommitLog offsets >= `phys` (re-dispatched later)."""
        for cq in self.queues.values():
            dropped = cq.truncate_phys(phys)
            if dropped:
                log.info("recovery: %s/%d: re-dispatching %d units past the checkpoint", cq.topic, cq.queue_id, dropped)

    def advance_min(self, commitlog_min: int) -> list[tuple[int, int, str]]:
        """`ConsumeQueue.advance_min` on every queue; the detached files of all."""
        detached = []
        for cq in self.queues.values():
            detached += cq.advance_min(commitlog_min)
        return detached

    def detach_topic(self, topic: str) -> tuple[list[ConsumeQueue], str]:
        """Forget a topic's queues (called under the store lock); the caller removes the returned
        directory and closes the returned queues without holding it."""
        self._by_topic.pop(topic, None)
        return [self.queues.pop(k) for k in [k for k in self.queues if k[0] == topic]], \
            os.path.join(self.dir, topic_dir(topic))

    def drain(self) -> list[ConsumeQueue]:
        """Write every queue's buffered units; the queues (to sync outside the store lock). Raises
        OSError after trying every queue if any failed (those keep their units buffered)."""
        failed = [cq for cq in self.queues.values() if not cq.try_drain()]
        if failed:
            raise OSError(f"{len(failed)} ConsumeQueue(s) not written, e.g. {failed[0].topic}-"
                          f"{failed[0].queue_id}: {failed[0].write_error}")
        return list(self.queues.values())

    def close(self) -> None:
        for cq in self.queues.values():
            cq.close()
