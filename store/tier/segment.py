"""A segment object: one queue's entries from one sealed CommitLog file, in the CommitLog's own
layout (codec.remoting.message), followed by an index and a footer:

    entries ... | index: N x INDEX_ENTRY | keys: K x KEY_ENTRY | footer: FOOTER (N, K, "RGT2")

(objects uploaded before the key section have no keys and the footer (N, "RGT1")). Each index row names an entry's first queue offset, its offset count (an inner batch holds many),
its CommitLog position and size (so readers keep addressing it by CommitLog offset, as msgIds and
ConsumeQueue units do), its store timestamp and tags code. Entries lie back to back in index
order, so an entry's place in the object is the sum of the sizes before it. The key section lists
(crc32 of "topic#key", row) sorted, for each key the IndexFile would hold (KEYS tokens, UNIQ_KEY,
an inner batch's keys), so a query by key reads only the entries whose key hash matches.

The manifest records the object's checksum and, per CHUNK-sized piece, the piece's: a reader
downloads only the pieces it needs (a ranged GET) and checks each (store.tier.cache). Segments are
checked by CRC32C since manifest version 2 (store.tier.payload), by SHA-256 before."""
from __future__ import annotations

import bisect
import hashlib
import struct
from dataclasses import dataclass

from store.tier import entries
from store.tier.entries import key_hash
from store.tier.payload import Parts, crc32c_hex

INDEX_ENTRY = struct.Struct(">qiqiqi")  # queue offset, count, CommitLog offset, size, store timestamp, tags code
KEY_ENTRY = struct.Struct(">Ii")  # crc32 of "topic#key", row
FOOTER_V1 = struct.Struct(">i4s")
MAGIC_V1 = b"RGT1"
FOOTER = struct.Struct(">ii4s")
MAGIC = b"RGT2"
CHUNK_MIN, CHUNK_MAX = 16 << 10, 1 << 20


class SegmentError(ValueError):
    """A segment object that is not what its manifest says (truncated, corrupt)."""


@dataclass
class Built:
    """A segment being built from one file: its entries and index rows."""
    topic: str
    queue_id: int
    spans: list  # [start, end) of the file's bytes holding the entries; adjacent entries share one
    rows: list
    keys: list  # (key hash, row)
    min_record_ts: int = -1
    max_record_ts: int = -1

    def payload(self, data) -> Parts:
        """The object's bytes, not copied: views of the file's bytes `data`, then index and footer."""
        view = memoryview(data)
        index = b"".join(INDEX_ENTRY.pack(*r) for r in self.rows)
        keys = b"".join(KEY_ENTRY.pack(*k) for k in sorted(self.keys))
        return Parts([*(view[s:e] for s, e in self.spans), index + keys + FOOTER.pack(len(self.rows), len(self.keys), MAGIC)])

    @property
    def index_at(self) -> int:
        return sum(e - s for s, e in self.spans)


def build(data: bytes, file_start: int, tiered, untiered: set) -> dict[tuple[str, int], Built]:
    """The segments of one sealed file for the topics `tiered(topic)` accepts (asked once per topic),
    by (topic, queue); the topics it refuses are added to `untiered`."""
    out: dict[tuple[str, int], Built] = {}
    for e in entries.scan(data, file_start, tiered):
        if e.key_hashes is None:
            untiered.add(e.topic)
            continue
        key = (e.topic, e.queue_id)
        seg = out.get(key)
        if seg is None:
            seg = out[key] = Built(e.topic, e.queue_id, [], [], [])
        if e.key_hashes:
            row = len(seg.rows)
            seg.keys += [(h, row) for h in e.key_hashes]
        seg.min_record_ts = e.min_record_ts if seg.min_record_ts < 0 else min(seg.min_record_ts, e.min_record_ts)
        seg.max_record_ts = max(seg.max_record_ts, e.max_record_ts)
        pos = e.pos
        if seg.spans and seg.spans[-1][1] == pos:
            seg.spans[-1][1] = pos + e.size
        else:
            seg.spans.append([pos, pos + e.size])
        seg.rows.append((e.queue_offset, e.count, file_start + pos, e.size, e.store_timestamp, e.tags_code))
    return out


def checksum(kind: str, piece) -> str:
    """The hex checksum of `kind` ("crc32c" | "sha256": objects of version 1 manifests) of `piece`."""
    return crc32c_hex(piece) if kind == "crc32c" else hashlib.sha256(piece).hexdigest()


def chunk_size(file_size: int) -> int:
    """The checked pieces of the segments of files of this size: 1/16 of a file, 16 KiB to 1 MiB."""
    return max(CHUNK_MIN, min(CHUNK_MAX, file_size // 16))


class SegmentIndex:
    """The parsed index (and key section) of a checked segment: `tail` holds the object's bytes from
    `base` to its end (the whole object: base 0); the entries before `index_at` need not be there."""

    def __init__(self, tail: bytes, base: int = 0) -> None:
        size = base + len(tail)
        if len(tail) >= FOOTER.size and tail[-4:] == MAGIC:
            n, k, _magic = FOOTER.unpack_from(tail, len(tail) - FOOTER.size)
            keys_at = size - FOOTER.size - k * KEY_ENTRY.size
        elif len(tail) >= FOOTER_V1.size and tail[-4:] == MAGIC_V1:
            (n, _magic), k = FOOTER_V1.unpack_from(tail, len(tail) - FOOTER_V1.size), 0
            keys_at = size - FOOTER_V1.size
        else:
            raise SegmentError("bad footer")
        index_at = keys_at - n * INDEX_ENTRY.size
        if n < 0 or k < 0 or index_at < base:
            raise SegmentError("bad footer")
        self.index_at = index_at
        self.has_keys = tail[-4:] == MAGIC
        self.rows = [INDEX_ENTRY.unpack_from(tail, index_at - base + i * INDEX_ENTRY.size) for i in range(n)]
        keys = [KEY_ENTRY.unpack_from(tail, keys_at - base + i * KEY_ENTRY.size) for i in range(k)]
        self.key_hashes = [h for h, _row in keys]
        self.key_rows = [row for _h, row in keys]
        self.offsets = [r[0] for r in self.rows]
        self.phys = [r[2] for r in self.rows]
        self.at = []
        pos = 0
        for r in self.rows:
            self.at.append(pos)
            pos += r[3]
        if pos != index_at or self.key_hashes != sorted(self.key_hashes):
            raise SegmentError("index does not add up to the entries")

    def rows_with_key(self, index_key: str) -> list[int] | None:
        """Rows whose entry may hold `index_key` (a hash match), None when the segment has no key
        section (uploaded before it: every row may)."""
        if not self.has_keys:
            return None
        h = key_hash(index_key)
        i = bisect.bisect_left(self.key_hashes, h)
        out = []
        while i < len(self.key_hashes) and self.key_hashes[i] == h:
            out.append(self.key_rows[i])
            i += 1
        return sorted(set(out))

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
