"""What the tier holds, as committed manifests say, and reads from it: the remote part of each queue
below its local start, addressed as the local store addresses it (queue offsets, CommitLog offsets).

`starts/<topic>.json` narrows what the manifests list: segments of files before its `file` belong
to an earlier topic of the same name (deleted since), and a queue's segments wholly below its
`queues` start are past remote retention (their objects are deleted after that start is written)."""
from __future__ import annotations

import bisect
import json
import logging
import threading

from codec.remoting import message as M
from store.tier.manifest import MANIFESTS, STARTS, Manifest, SegmentRef, file_of_manifest_key, starts_key, \
    topic_of_starts_key
from store.objstore.api import NotFound, ObjectStoreError
from store.tier.cache import Pending
from store.tier.segment import SegmentError

log = logging.getLogger("rocketgate.tier")


class RemoteLog:
    def __init__(self, objects, cache, stats) -> None:
        self.objects = objects
        self.cache = cache
        self.stats = stats
        self._lock = threading.RLock()
        self.manifests: dict[int, Manifest] = {}  # file start -> its committed manifest
        self._queues: dict[tuple[str, int], list[SegmentRef]] = {}  # by first offset
        self._by_file: dict[int, list[SegmentRef]] = {}
        self.starts: dict[str, dict] = {}  # topic -> {"file": F, "queues": {qid (str): start}}
        self._live: dict[tuple[str, int], list[SegmentRef]] = {}  # `live` answers until the next change
        self.loaded = False  # the manifests were read

    # ------------------------------------------------------------------ loading

    def load(self) -> None:
        """Read every manifest and topic start (at startup; again by the upload service when the
        object store could not be reached then). ObjectStoreError leaves it not `loaded`."""
        with self._lock:
            self.manifests, self._queues, self._by_file, self.starts = {}, {}, {}, {}
            self._live.clear()
        for info in self.objects.list(STARTS):
            try:
                self.starts[topic_of_starts_key(info.key)] = json.loads(self.objects.get(info.key))
            except ValueError as exc:
                log.error("tier: %s unreadable (%s): ignored", info.key, exc)
        for info in self.objects.list(MANIFESTS):
            start = file_of_manifest_key(info.key)
            if start is None:
                continue
            try:
                self.add(Manifest.decode(self.objects.get(info.key)))
            except (ValueError, KeyError, TypeError) as exc:
                self.stats.error("manifest")
                log.error("tier: manifest %s unreadable (%s): its file is not served", info.key, exc)
        self.loaded = True

    def add(self, manifest: Manifest) -> None:
        with self._lock:
            self._live.clear()
            self.manifests[manifest.file_start] = manifest
            self._by_file[manifest.file_start] = list(manifest.segments)
            for ref in manifest.segments:
                refs = self._queues.setdefault((ref.topic, ref.queue_id), [])
                i = bisect.bisect_left([r.first for r in refs], ref.first)
                refs.insert(i, ref)

    @property
    def committed_end(self) -> int:
        """One past the last committed file (0: none)."""
        with self._lock:
            if not self.manifests:
                return 0
            last = max(self.manifests)
            return last + self.manifests[last].file_size

    def is_committed(self, file_start: int) -> bool:
        return file_start in self.manifests

    # ------------------------------------------------------------------ retention and deletion

    def live(self, topic: str, queue_id: int) -> list[SegmentRef]:
        """The queue's segments of its current incarnation not wholly below its remote start."""
        key = (topic, queue_id)
        found = self._live.get(key)
        if found is not None:
            return found
        with self._lock:
            refs = self._queues.get(key, [])
            st = self.starts.get(topic) or {}
            born = int(st.get("file", -1))
            low = int((st.get("queues") or {}).get(str(queue_id), 0))
            found = self._live[key] = [r for r in refs if r.file_start >= born and r.end > low]
            return found

    def set_starts(self, topic: str, doc: dict) -> None:
        """Write a topic's starts object first, then forget (the caller deletes) what it cuts off."""
        self.objects.put(starts_key(topic), json.dumps(doc, sort_keys=True).encode())
        with self._lock:
            self.starts[topic] = doc
            self._live.clear()

    def queues_of(self, topic: str) -> list[int]:
        with self._lock:
            return sorted(q for (t, q) in self._queues if t == topic and self.live(t, q))

    def queue_keys(self, topic: str | None = None) -> list[tuple[str, int]]:
        """(topic, queue) of every queue with segments listed (of `topic` only, if given), live or not."""
        with self._lock:
            return sorted(k for k in self._queues if topic is None or k[0] == topic)

    def topics(self) -> set[str]:
        with self._lock:
            return {t for (t, _q) in self._queues}

    def forget(self, refs) -> None:
        with self._lock:
            self._live.clear()
            for ref in refs:
                queue = self._queues.get((ref.topic, ref.queue_id), [])
                if ref in queue:
                    queue.remove(ref)

    # ------------------------------------------------------------------ reading by queue

    def start(self, topic: str, queue_id: int) -> int | None:
        """The queue's first remote offset, None when the tier holds nothing of it."""
        refs = self.live(topic, queue_id)
        if not refs:
            return None
        low = int(((self.starts.get(topic) or {}).get("queues") or {}).get(str(queue_id), 0))
        return max(refs[0].first, low)

    def end(self, topic: str, queue_id: int) -> int | None:
        refs = self.live(topic, queue_id)
        return refs[-1].end if refs else None

    def _segment(self, topic: str, queue_id: int, offset: int) -> SegmentRef | None:
        """The segment holding `offset`, or the first one after it."""
        for ref in self.live(topic, queue_id):
            if offset < ref.end:
                return ref
        return None

    def units(self, topic: str, queue_id: int, start: int, count: int, upto: int) -> list:
        """ConsumeQueue units (phys, size, tags code) of [start, min(start + count, upto))."""
        out: list = []
        off = start
        end = min(start + count, upto)
        while off < end:
            ref = self._segment(topic, queue_id, off)
            if ref is None or ref.first >= end:
                out += [(0, 0, 0)] * (end - off)
                break
            if ref.first > off:
                out += [(0, 0, 0)] * (ref.first - off)
                off = ref.first
            stop = min(ref.end, end)
            try:
                index = self.cache.ensure(ref)
                units = index.units(off, stop)
                readable = self._readable(ref, index, units)
                out += readable
                if len(readable) < len(units):  # the rest once their entries' pieces are downloaded
                    return out
            except (SegmentError, NotFound) as exc:  # corrupt or gone: not served, the rest is
                log.error("tier: %s-%d offsets %d..%d not served: %s", topic, queue_id, off, stop, exc)
                out += [(0, 0, 0)] * (stop - off)
            except (Pending, ObjectStoreError, OSError):  # on its way, or the store is down: later
                return out
            off = stop
            if off < end and off == ref.end:
                after = self._segment(topic, queue_id, off)
                if after is not None:
                    self.cache.prefetch(after)  # sequential readers find the next one cached
        return out

    def _readable(self, ref: SegmentRef, index, units: list) -> list:
        """`units` up to the first whose entry's bytes are not in the read cache (when that is the
        first, its piece's download is started): a reader never gets a unit whose entry it cannot
        read yet, so none skips it as gone. The entries of pieces found damaged are holes."""
        entries = [u[0] for u in units if u[1]]
        if entries:
            first, last = index.row_at_phys(entries[0]), index.row_at_phys(entries[-1])
            end = index.at[last] + index.rows[last][3]
            if not self.cache.recently_damaged(ref) and self.cache.available(ref, index.at[first], end, False) == end:
                return units
        out, known = [], {}
        for phys, size, code in units:
            if size:
                state = known.get(phys)
                if state is None:
                    at = index.at[index.row_at_phys(phys)]
                    state = known[phys] = "hole" if self.cache.damaged(ref, at, size) else \
                        "ok" if self.cache.available(ref, at, at + size, not out) == at + size else "later"
                if state == "later":
                    return out
                if state == "hole":
                    phys, size, code = 0, 0, 0
            out.append((phys, size, code))
        return out

    def read_entry(self, phys: int, size: int, file_size: int) -> bytes:
        """CommitLog bytes [phys, phys + size) of one segment's consecutive entries; shorter (or empty)
        where the tier does not hold them back to back."""
        with self._lock:
            candidates = [r for r in self._by_file.get(phys - phys % file_size, ()) if r.first_phys <= phys < r.end_phys]
        for ref in candidates:
            try:
                index = self.cache.ensure(ref)
            except (SegmentError, NotFound):
                continue
            except (Pending, ObjectStoreError, OSError):
                return b""
            i = index.row_at_phys(phys)
            if i is None:
                continue
            n, j = 0, i
            while j < len(index.rows) and n < size and index.rows[j][2] == phys + n:
                n += index.rows[j][3]
                j += 1
            try:
                return self.cache.read(ref, index.at[i], min(n, size))
            except (SegmentError, NotFound, Pending, ObjectStoreError, OSError):
                return b""
        return b""

    def get(self, phys: int, file_size: int) -> M.StoredMessage | None:
        head = self.read_entry(phys, 8, file_size)
        if len(head) < 8:
            return None
        size = int.from_bytes(head[:4], "big")
        raw = self.read_entry(phys, size, file_size)
        try:
            msg = M.decode(raw) if len(raw) == size else None
        except M.MessageFormatError:
            return None
        if msg is None or msg.physical_offset != phys or M.body_crc(msg.body) != msg.body_crc:
            return None
        return msg

    def offset_for_timestamp(self, topic: str, queue_id: int, ts_ms: int) -> int | None:
        """First remote offset whose store timestamp >= ts_ms, None when every remote one is older."""
        low = self.start(topic, queue_id)
        for ref in self.live(topic, queue_id):
            if ref.last_ts < ts_ms:
                continue
            try:
                index = self.cache.ensure(ref)
            except (SegmentError, NotFound):
                continue
            except (Pending, ObjectStoreError, OSError):
                return max(ref.first, low or 0)  # a lower bound: every earlier segment is older
            for r in index.rows:
                if r[4] >= ts_ms and r[0] + r[1] > (low or 0):
                    return max(r[0], low or 0)
        return None

    def first_reaching(self, topic: str, queue_id: int, ts_ms: int) -> int | None:
        """The first offset of the first live segment whose records may reach `ts_ms` (a record
        timestamp >= it) by the manifests' `max_record_ts`, so a search by record time reads that
        segment only; the remote end when none does; None when a segment without the bound (a
        version 1 manifest) comes first: the tier cannot tell without reading it."""
        refs = self.live(topic, queue_id)
        for ref in refs:
            if ref.max_record_ts < 0:
                return None
            if ref.max_record_ts >= ts_ms:
                return ref.first
        return refs[-1].end if refs else None

    def query_by_key(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int, below: int) -> list:
        """Messages of `topic` with key `key` stored in [begin_ms, end_ms) at CommitLog offsets below
        `below` (what is no longer local), newest first, from the segments whose time range overlaps:
        their key sections name the entries to read (a segment uploaded before them is read whole)."""
        refs = [r for q in self.queues_of(topic) for r in self.live(topic, q)
                if r.first_phys < below and r.last_ts >= begin_ms and r.first_ts <= end_ms]
        out = []
        for ref in sorted(refs, key=lambda r: r.last_ts, reverse=True):
            try:
                index = self.cache.ensure(ref)
            except (Pending, SegmentError, ObjectStoreError, OSError):
                continue
            rows = index.rows_with_key(f"{topic}#{key}")
            for i in sorted(range(len(index.rows)) if rows is None else rows, reverse=True):
                _q, _n, phys, size, ts, _code = index.rows[i]
                if phys >= below or not begin_ms <= ts <= end_ms:
                    continue
                try:
                    msg = M.decode(self.cache.read(ref, index.at[i], size))
                except (M.MessageFormatError, Pending, SegmentError, ObjectStoreError, OSError):
                    continue
                p = msg.properties
                if (key in (p.get("KEYS") or "").split(" ") or key == p.get("UNIQ_KEY")
                        or (msg.keys and key in msg.keys)):
                    out.append(msg)
                    if len(out) >= max_num:
                        return out
        return out
