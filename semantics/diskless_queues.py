"""The store as the pop engine reads queues, with diskless queues answered from their index
(docs/diskless.md, "Share groups"): KIP-932 share partitions run on the pop engine, which walks a
queue's units (CommitLog offset, size, tags code per offset); a diskless queue has no units, so this
view makes them from the index entries as last refreshed (`DisklessIndex.refresh`, called off the
loop before an acquire). Every other call goes to the store itself, so the engine's own state (its
log topic, its snapshot) stays where it is.

A diskless offset's unit is (DISKLESS_PHYS + its entry's seq, the entry's size, tags code 0): all
offsets of an entry share one "physical offset", as the records of an inner batch do, so the engine's
batch-optimized acquire leases on to the end of the entry; DISKLESS_PHYS is above any CommitLog
offset, so the engine's "below the CommitLog start" test never drops one. Nothing decodes them:
share groups acquire offsets only (`messages=False`); the Kafka layer reads the batches itself."""
from __future__ import annotations

import bisect

from semantics.diskless import is_diskless

DISKLESS_PHYS = 1 << 62


class DisklessQueueView:
    """Wraps the store for the pop engine; `index` is the gateway's DisklessIndex."""

    def __init__(self, store, index) -> None:
        self._store = store
        self._index = index

    def __getattr__(self, name):
        return getattr(self._store, name)

    def _diskless(self, topic: str) -> bool:
        return is_diskless(self._store.topics.get(topic))

    def min_offset(self, topic: str, queue_id: int) -> int:
        if self._diskless(topic):
            return self._index.start(topic, queue_id)
        return self._store.min_offset(topic, queue_id)

    def max_offset(self, topic: str, queue_id: int) -> int:
        if self._diskless(topic):
            return self._index.end(topic, queue_id)
        return self._store.max_offset(topic, queue_id)

    def units(self, topic: str, queue_id: int, start: int, max_count: int) -> list[tuple[int, int, int]]:
        if not self._diskless(topic):
            return self._store.units(topic, queue_id, start, max_count)
        entries = self._index.entries(topic, queue_id)
        i = max(bisect.bisect_right([e.base for e in entries], start) - 1, 0)
        out, offset = [], start
        for entry in entries[i:]:
            if len(out) >= max_count:
                break
            while offset < entry.end and len(out) < max_count:
                if offset >= entry.base:
                    out.append((DISKLESS_PHYS + entry.seq, entry.size, 0))
                offset += 1
            if offset < entry.base:  # (entries are contiguous: not reached)
                break
        return out

    def entry_end(self, topic: str, queue_id: int, offset: int, phys: int, hi: int) -> int:
        if not self._diskless(topic):
            return self._store.entry_end(topic, queue_id, offset, phys, hi)
        for entry in self._index.entries(topic, queue_id):
            if DISKLESS_PHYS + entry.seq == phys:
                return min(entry.end, hi)
        return min(offset + 1, hi)


def diskless_queue_view(store, diskless):
    """The store the pop engine reads queues from: the store itself without diskless topics."""
    return store if diskless is None else DisklessQueueView(store, diskless.index)
