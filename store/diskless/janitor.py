"""Retention, compaction and garbage collection of diskless objects (docs/diskless.md, "Janitor").
Blocking: the gateway runs `Janitor.run_once` in a worker thread.

- Retention deletes a queue's oldest index entries (oldest first, so what is left is always an
  unbroken run) by `retention.ms` (the entry's newest record timestamp) and `retention.bytes`; the
  newest entry always stays, so the next commit can never reuse a deleted slot's offsets.
- Compaction copies runs of a queue's entries that still sit in shared WAL objects into one
  per-queue segment object, then rewrites each entry in place (same seq and offsets, new location):
  every intermediate state is a valid index, and a reader holding an old entry finds the bytes in the
  old object until it goes, then reads the entry again (`DisklessIndex._run`).
- A deleted topic's incarnation (a `layout.DELETED` tombstone) has its index entries deleted, so
  its objects are collected as any unreferenced one.
- Garbage collection deletes a WAL or segment object only once no entry in the store refers to it
  and it has been seen so for `grace_s`. A WAL object PUT moments ago has no entry yet: one this
  janitor never saw an entry name waits `layout.COMMIT_DEADLINE_S` too (its writer gives up
  committing by then), whatever the grace: a short grace must not delete the bytes of an entry
  still being committed (an acknowledged batch lost, every read of its queue failing)."""
from __future__ import annotations

import dataclasses
import json
import time

from store.diskless import layout
from store.diskless.index import DisklessIndex
from store.diskless.layout import IndexEntry
from store.objstore.api import NotFound, ObjectStoreError

SEGMENT_BYTES = 8 << 20  # a compacted per-queue object holds up to this much
SETTLE_S = 2 * layout.COMMIT_DEADLINE_S  # an entry naming a segment this long is settled (see `referenced`)
# WAL and segment keys start with their writer's clock (layout): a pass lists those named since the
# last pass began, less this margin (other gateways' clocks, a PUT that took long); older ones are
# known from earlier listings (`collect`). A full listing each FULL_LIST_S finds any straggler.
LIST_MARGIN_S = layout.COMMIT_DEADLINE_S
FULL_LIST_S = 3600.0


@dataclasses.dataclass
class JanitorStats:
    entries_deleted: int = 0
    entries_compacted: int = 0
    segments_written: int = 0
    objects_deleted: int = 0


class Janitor:
    def __init__(self, index: DisklessIndex, grace_s: float = 300.0, segment_bytes: int = SEGMENT_BYTES,
                 settle_s: float = SETTLE_S, list_margin_s: float = LIST_MARGIN_S) -> None:
        self.index = index
        self.grace_s = grace_s
        self.settle_s = settle_s
        self.list_margin_s = list_margin_s
        self.segment_bytes = segment_bytes
        self.stats = JanitorStats()
        self._unreferenced_since: dict[str, float] = {}
        self._once_referenced: set[str] = set()  # objects an entry was seen naming (present ones)
        self._tombstones_empty_since: dict[str, float] = {}
        self._entry_wals: dict[str, tuple[str, str, float]] = {}  # index key -> (ETag, object named, since when)
        self._settled: dict[str, dict[int, str]] = {}  # index prefix -> {seq: segment} of its settled front run
        self._first: dict[str, int] = {}  # index prefix -> its first entry's seq, as retention last saw it
        self._present: set[str] = set()  # WAL and segment objects in the store, as listed (`collect`)
        self._listed_at: float | None = None  # wall clock when the last listing of them began
        self._full_at = float("-inf")  # (monotonic) when the last full listing began

    def run_once(self, limits: dict[str, tuple[int, int]], now_ms: int, compact: bool = True) -> JanitorStats:
        """One pass over every diskless queue of the bucket: retention by `limits` (topic ->
        (retention.ms, retention.bytes), -1 for none), compaction, then garbage collection."""
        queues = [(t, q) for t, n in self.index.topics().items() for q in range(n)]
        for topic, queue in queues:
            self.index.refresh(topic, queue)
            self._once_referenced.update(e.wal for e in self.index.entries(topic, queue))
            ms, size = limits.get(topic, (-1, -1))
            self.retain(topic, queue, ms, size, now_ms)
            if compact:
                self.compact(topic, queue)
        self.purge_deleted()  # a deleted topic's entries go: its objects are no longer referenced
        self.collect(self.referenced(queues))
        return self.stats

    def retain(self, topic: str, queue: int, ms: int, size: int, now_ms: int) -> None:
        entries = self.index.entries(topic, queue)
        keep = 0  # index of the first entry kept
        if ms >= 0:
            while keep < len(entries) - 1 and 0 <= entries[keep].max_ts < now_ms - ms:
                keep += 1
        if size >= 0:
            excess = sum(e.size for e in entries[keep:]) - size
            while keep < len(entries) - 1 and entries[keep].size <= excess:
                excess -= entries[keep].size
                keep += 1
        prefix = self.index.index_prefix(topic, queue)
        first_kept = entries[keep].seq if entries else 0
        head = [layout.seq_of(i.key) for i in self.index.store.list(prefix, limit=1)]  # one request: the first key
        below = []
        if head and (head[0] is None or head[0] < first_kept):  # entries to delete, or one left by a racing rewrite
            below = sorted(s for s in (layout.seq_of(i.key) for i in self.index.store.list(prefix))
                           if s is not None and s < first_kept)
        self._first[prefix] = max(first_kept, head[0] or 0) if head else first_kept
        self.index.drop_front(topic, queue, first_kept)
        for seq in below:  # oldest first: a crash leaves an unbroken run
            self.index.store.delete(self.index.index_key(topic, queue, seq))
            self.stats.entries_deleted += 1

    def compact(self, topic: str, queue: int) -> None:
        """Move runs of WAL-held entries (all but the newest, which a writer may be about to follow)
        into per-queue segment objects."""
        entries = self.index.entries(topic, queue)[:-1]
        run: list[IndexEntry] = []
        for entry in entries:
            if entry.wal.startswith(layout.WAL) and sum(e.size for e in run) + entry.size <= self.segment_bytes:
                run.append(entry)
                continue
            self._segment(topic, queue, run)
            run = [entry] if entry.wal.startswith(layout.WAL) else []
        self._segment(topic, queue, run)

    def _segment(self, topic: str, queue: int, run: list[IndexEntry]) -> None:
        if len(run) < 2:
            return
        try:
            parts = [self.index.run_of(topic, queue, e) for e in run]
        except ObjectStoreError:  # deleted by retention elsewhere meanwhile: next pass
            return
        key = layout.segment_key(self.index.home(topic), queue, int(time.time() * 1000))
        self.index.store.put(key, b"".join(parts), if_absent=True)
        put_at = time.monotonic()
        self.stats.segments_written += 1
        pos = 0
        for entry, part in zip(run, parts):
            pos += len(part)
            entry_key = self.index.index_key(topic, queue, entry.seq)
            try:  # as it is now: another janitor may have moved it, or retention deleted it
                current = IndexEntry.decode(self.index.store.get(entry_key))
            except NotFound:
                continue  # never recreated below the log start
            if current.wal != entry.wal:
                continue  # moved by another janitor: a settled entry is never rewritten (`referenced`)
            if time.monotonic() - put_at > layout.COMMIT_DEADLINE_S:
                return  # the rest stays where it is; the segment's unreferenced tail is collected
            moved = dataclasses.replace(entry, wal=key, pos=pos - len(part))
            self.index.store.put(entry_key, moved.encode())
            self.index.replace(topic, queue, moved)
            self.stats.entries_compacted += 1

    def purge_deleted(self) -> None:
        """Delete the index entries of each deleted incarnation (`layout.DELETED` tombstones); the
        tombstone goes once a pass found none left for the grace period (a late writer that had not
        heard of the deletion may still add one meanwhile)."""
        now = time.monotonic()
        for info in self.index.store.list(layout.DELETED):
            home = info.key[len(layout.DELETED):]
            try:
                partitions = int(json.loads(self.index.store.get(info.key))["partitions"])
            except (ValueError, TypeError, KeyError, NotFound):
                continue
            found = 0
            for queue in range(partitions):
                for entry in self.index.store.list(layout.index_prefix(home, queue)):
                    self._saw_entry(entry.key)
                    self.index.store.delete(entry.key)
                    found += 1
                    self.stats.entries_deleted += 1
            if found:
                self._tombstones_empty_since.pop(home, None)
            elif now - self._tombstones_empty_since.setdefault(home, now) >= self.grace_s:
                self.index.store.delete(info.key)
                self._tombstones_empty_since.pop(home, None)

    def _saw_entry(self, key: str) -> None:
        """Note the object the entry at `key` names (it is about to be deleted): no longer in flight."""
        try:
            self._once_referenced.add(IndexEntry.decode(self.index.store.get(key)).wal)
        except (NotFound, ObjectStoreError):  # gone meanwhile, or unreadable: its object waits the deadline
            pass

    def referenced(self, queues: list[tuple[str, int]]) -> set[str]:
        """The objects the store's entries name now. Only what can still change is listed: an entry
        naming a segment is never rewritten (compaction moves only WAL-held entries, and checks each
        one just before its rewrite), only deleted from the front by retention, so once seen naming
        the same segment for `settle_s` (longer than a compaction may take to rewrite after its
        segment PUT: a rewrite racing the one seen has landed by then) it is settled, remembered,
        and each pass lists only the entries after the queue's settled front run (S3 StartAfter),
        the front being where retention last found the first entry. Those are listed from the store,
        not trusted from memory: another gateway's compaction may have rewritten them; an entry is
        read again only when its ETag changed (a rewrite changes its bytes)."""
        out, listed, now = set(), {}, time.monotonic()
        for topic, queue in queues:
            prefix = self.index.index_prefix(topic, queue)
            first = self._first.get(prefix, 0)
            settled = {seq: wal for seq, wal in self._settled.get(prefix, {}).items() if seq >= first}
            mark = max(settled) + 1 if settled else None  # the next seq to settle
            after = self.index.index_key(topic, queue, mark - 1) if mark is not None else ""
            for info in self.index.store.list(prefix, start_after=after):
                seq = layout.seq_of(info.key)
                if seq is None:
                    continue
                known = self._entry_wals.get(info.key)
                if known is not None and info.etag and known[0] == info.etag:
                    wal, since = known[1], known[2]
                else:
                    try:
                        wal, since = IndexEntry.decode(self.index.store.get(info.key)).wal, now
                    except NotFound:  # retention deleted it meanwhile
                        continue
                out.add(wal)
                mark = seq if mark is None else mark
                if seq == mark and info.etag and not wal.startswith(layout.WAL) and now - since >= self.settle_s:
                    settled[seq], mark = wal, seq + 1
                else:
                    listed[info.key] = (info.etag, wal, since)
            self._settled[prefix] = settled
            out.update(settled.values())
        self._entry_wals = listed  # entries no longer listed are forgotten
        prefixes = {self.index.index_prefix(t, q) for t, q in queues}
        self._settled = {p: s for p, s in self._settled.items() if p in prefixes}  # deleted topics forgotten
        return out

    def collect(self, referenced: set[str]) -> None:
        now = time.monotonic()
        present = self._listed(referenced, now)
        for key in sorted(present):
            if key in referenced:
                self._once_referenced.add(key)
                self._unreferenced_since.pop(key, None)
                continue
            since = self._unreferenced_since.setdefault(key, now)
            if now - since >= self._grace_of(key):
                self.index.store.delete(key)  # (one another janitor deleted meanwhile: nothing to do)
                present.discard(key)
                self._unreferenced_since.pop(key, None)
                self._once_referenced.discard(key)
                self.stats.objects_deleted += 1
        for key in list(self._unreferenced_since):
            if key not in present:
                del self._unreferenced_since[key]
        self._once_referenced &= present
        self._present = present

    def _listed(self, referenced: set[str], now: float) -> set[str]:
        """The WAL and segment objects in the store. Listed in full at the first pass and every
        FULL_LIST_S; otherwise only the keys named since the last listing began (less the margin),
        added to those known: an object older than that was listed then, or is named by an entry
        (`referenced`), and goes from memory when this janitor deletes it. (Keys of gateways from
        before the time stamps, a bare uuid, list wherever their first characters put them.)"""
        wall, full = time.time(), self._listed_at is None or now - self._full_at >= FULL_LIST_S
        present = set() if full else set(self._present)
        present.update(k for k in referenced if k.startswith((layout.WAL, layout.SEGMENTS)))
        since_ms = 0 if full else int((self._listed_at - self.list_margin_s) * 1000)
        for prefix in (layout.WAL, layout.SEGMENTS):
            after = "" if full else layout.named_since(prefix, since_ms)
            for info in self.index.store.list(prefix, start_after=after):
                present.add(info.key)
        self._listed_at = wall
        self._full_at = now if full else self._full_at
        return present

    def _grace_of(self, key: str) -> float:
        """How long `key` must stay unreferenced before it goes: a WAL object no entry was ever seen
        naming may be one whose entries are still being committed."""
        if key.startswith(layout.WAL) and key not in self._once_referenced:
            return max(self.grace_s, layout.COMMIT_DEADLINE_S)
        return self.grace_s
