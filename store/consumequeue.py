"""ConsumeQueue: per topic/queue, 20-byte units (CommitLog offset i64, size i32, tags code i64).

Unit *n* is logical offset *n*; file `<20-digit byte position>` holds `units_per_file` units.
The queue is derived data: recovery rebuilds it from the CommitLog.
"""
from __future__ import annotations

import struct

from store.segments import Segments

UNIT = struct.Struct(">qiq")
UNIT_SIZE = UNIT.size  # 20
DRAIN_AT = 64 * 1024


class ConsumeQueue:
    """Units are buffered in memory and written on flush (or every 64 KiB); the caller serializes."""

    def __init__(self, directory: str, topic: str, queue_id: int, units_per_file: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.dir = directory
        self.seg = Segments(directory, units_per_file * UNIT_SIZE)
        if self.seg.end % UNIT_SIZE:  # a torn unit at the tail
            self.seg.truncate(self.seg.end - self.seg.end % UNIT_SIZE)
        self.max_offset = self.seg.end // UNIT_SIZE
        self.min_offset = self.seg.begin // UNIT_SIZE
        self.pending = bytearray()
        self.pending_start = self.max_offset

    def put(self, units: bytes, count: int) -> None:
        """Append `count` units (already packed)."""
        self.pending += units
        self.max_offset += count
        if len(self.pending) >= DRAIN_AT:
            self.drain()

    def start_at(self, offset: int) -> None:
        """Make an empty queue begin at logical `offset` (rebuilding after its files were deleted)."""
        self.drain()
        self.seg.truncate(self.seg.begin)
        self.min_offset = self.max_offset = self.pending_start = offset

    def drain(self) -> None:
        if self.pending:
            self.seg.write(self.pending_start * UNIT_SIZE, self.pending)
            self.pending = bytearray()
            self.pending_start = self.max_offset

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

    def truncate_phys(self, phys: int) -> int:
        """Drop units pointing at CommitLog offsets >= `phys` (recovery); returns how many went."""
        self.drain()
        cut = self.first_at_or_after(self.min_offset, self.max_offset, lambda p, s, c: p >= phys)
        dropped = self.max_offset - cut
        if dropped:
            self.seg.truncate(cut * UNIT_SIZE)
            self.max_offset = self.pending_start = cut
            self.min_offset = min(self.min_offset, cut)
        return dropped

    def advance_min(self, commitlog_min: int) -> None:
        """Move min_offset to the first unit still backed by the CommitLog; drop files wholly before it."""
        self.min_offset = self.first_at_or_after(
            self.min_offset, self.max_offset, lambda p, s, c: p >= commitlog_min and s > 0)
        self.drain()
        self.seg.remove_before(self.min_offset * UNIT_SIZE)

    def close(self) -> None:
        self.drain()
        self.seg.close()
