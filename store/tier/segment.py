"""A segment object: one queue's entries from one sealed CommitLog file, in the CommitLog's own
layout (codec.remoting.message), followed by an index and a footer:

    entries ... | index: N x INDEX_ENTRY | footer: FOOTER (N, magic)

Each index row names an entry's first queue offset, its offset count (an inner batch holds many),
its CommitLog position and size (so readers keep addressing it by CommitLog offset, as msgIds and
ConsumeQueue units do), its store timestamp and tags code. Entries lie back to back in index
order, so an entry's place in the object is the sum of the sizes before it."""
from __future__ import annotations

import bisect
import hashlib
import struct
from dataclasses import dataclass

from codec.remoting import message as M

INDEX_ENTRY = struct.Struct(">qiqiqi")  # queue offset, count, CommitLog offset, size, store timestamp, tags code
FOOTER = struct.Struct(">i4s")
MAGIC = b"RGT1"
_SIZE_MAGIC = struct.Struct(">iI")


class SegmentError(ValueError):
    """A segment object that is not what its manifest says (truncated, corrupt)."""


@dataclass
class Built:
    """A segment being built from one file: its entries and index rows."""
    topic: str
    queue_id: int
    parts: list
    rows: list

    def payload(self) -> bytes:
        index = b"".join(INDEX_ENTRY.pack(*r) for r in self.rows)
        return b"".join(self.parts) + index + FOOTER.pack(len(self.rows), MAGIC)


def walk(data: bytes, file_start: int):
    """Every entry of a sealed CommitLog file: (position, size, StoredMessage); stops at the blank
    marker or at the first byte that is not an entry (the rest of a file that was never filled)."""
    pos = 0
    while pos + 8 <= len(data):
        size, magic = _SIZE_MAGIC.unpack_from(data, pos)
        if magic != M.MAGIC_V1 or size < M.FIXED_SIZE or pos + size > len(data):
            return
        try:
            msg = M.decode(data, pos)
        except M.MessageFormatError:
            return
        if msg.physical_offset != file_start + pos:
            return
        yield pos, size, msg
        pos += size


def build(data: bytes, file_start: int, tiered, untiered: set) -> dict[tuple[str, int], Built]:
    """The segments of one sealed file for the topics `tiered(topic)` accepts, by (topic, queue);
    the topics it refuses are added to `untiered`."""
    out: dict[tuple[str, int], Built] = {}
    for pos, size, msg in walk(data, file_start):
        if not tiered(msg.topic):
            untiered.add(msg.topic)
            continue
        key = (msg.topic, msg.queue_id)
        seg = out.get(key)
        if seg is None:
            seg = out[key] = Built(msg.topic, msg.queue_id, [], [])
        codes = msg.tags_codes or [M.tags_code_of(msg.properties) if msg.properties else 0]
        seg.parts.append(data[pos:pos + size])
        seg.rows.append((msg.queue_offset, max(1, msg.batch_count), file_start + pos, size, msg.store_timestamp,
                         codes[0]))
    return out


def digest(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


class SegmentIndex:
    """The parsed index of a downloaded (and checked) segment object."""

    def __init__(self, payload: bytes) -> None:
        if len(payload) < FOOTER.size:
            raise SegmentError("shorter than its footer")
        n, magic = FOOTER.unpack_from(payload, len(payload) - FOOTER.size)
        index_at = len(payload) - FOOTER.size - n * INDEX_ENTRY.size
        if magic != MAGIC or n < 0 or index_at < 0:
            raise SegmentError("bad footer")
        self.rows = [INDEX_ENTRY.unpack_from(payload, index_at + i * INDEX_ENTRY.size) for i in range(n)]
        self.offsets = [r[0] for r in self.rows]
        self.phys = [r[2] for r in self.rows]
        self.at = []
        pos = 0
        for r in self.rows:
            self.at.append(pos)
            pos += r[3]
        if pos != index_at:
            raise SegmentError("index does not add up to the entries")

    def row_for_offset(self, offset: int) -> int:
        """Index of the row holding `offset` or the first after it (len(rows) if none)."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        if i >= 0 and offset < self.rows[i][0] + self.rows[i][1]:
            return i
        return i + 1

    def row_at_phys(self, phys: int) -> int | None:
        i = bisect.bisect_left(self.phys, phys)
        return i if i < len(self.phys) and self.phys[i] == phys else None

    def units(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """ConsumeQueue units (phys, size, tags code) of offsets [start, end); holes are zero units."""
        out: list = []
        off = start
        for q, n, phys, size, _ts, code in self.rows[self.row_for_offset(start):]:
            if off >= end:
                break
            if q > off:  # offsets no entry holds
                gap = min(q, end) - off
                out += [(0, 0, 0)] * gap
                off += gap
            stop = min(q + n, end)
            if stop > off:
                out += [(phys, size, code)] * (stop - off)
                off = stop
        return out
