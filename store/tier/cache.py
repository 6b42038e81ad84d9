"""The bounded on-disk read cache of segment pieces: a reader downloads only the pieces (chunks) of a
segment object it needs, with a ranged GET, and each is checked against the checksum its manifest
lists (CRC32C, or SHA-256 in version 1 manifests) before it is kept or served (an object uploaded
before chunks were recorded is one piece: the whole object and its sha256). Files are named by the
piece's SHA-256, or by object, piece and CRC32C (store.tier.manifest.SegmentRef.ident), evicted least recently used beyond
`max_bytes`. A piece that fails the check is not served (SegmentError): its entries read as holes
for FAILURE_KEPT seconds, then it is fetched again.

A reader never waits for a download on its own thread (the gateway's readers run on its event
loop): a segment not cached is downloaded on a thread of its own and the reader gets Pending at
once. Inside `collecting_misses()` those downloads are listed, so the gateway can await them off
the loop (`Download.when_done`) and read again (gateway.tier_reads)."""
from __future__ import annotations

import collections
import contextlib
import contextvars
import hashlib
import logging
import os
import threading
import time

from store.objstore.api import NotFound, ObjectStoreError
from store.tier.manifest import SegmentRef
from store.tier.segment import SegmentError, SegmentIndex, checksum

log = logging.getLogger("rocketgate.tier")
INDEXES_KEPT = 256
READAHEAD = 4  # pieces a download fetches past the one asked for when the one before it is cached
FAILURE_KEPT = 5.0  # seconds a failed download's error answers readers before the segment is fetched again
_MISSES: contextvars.ContextVar[list | None] = contextvars.ContextVar("tier_misses", default=None)


class Pending(Exception):
    """The segment is being downloaded: try again once it is (the reader serves nothing for now)."""


class Download:
    """One segment download on its own thread; `when_done` callbacks run on that thread."""
    __slots__ = ("done", "error", "ended_at", "_callbacks", "_lock")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.ended_at = 0.0  # time.monotonic()
        self._callbacks: list = []
        self._lock = threading.Lock()

    def when_done(self, callback) -> None:
        """Call `callback()` once the download finished (at once if it has)."""
        with self._lock:
            if not self.done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def finish(self) -> None:
        self.ended_at = time.monotonic()
        with self._lock:
            self.done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


@contextlib.contextmanager
def collecting_misses():
    """The list of the Downloads that reads made inside the block found pending."""
    misses: list = []
    token = _MISSES.set(misses)
    try:
        yield misses
    finally:
        _MISSES.reset(token)


class SegmentCache:
    def __init__(self, directory: str, objects, max_bytes: int, stats, read_wait: float = 0.0) -> None:
        self.dir = directory
        self.read_wait = read_wait  # seconds a reader waits for a download: 0 on an event loop
        self.objects = objects
        self.max_bytes = max_bytes
        self.stats = stats
        self._lock = threading.Lock()
        self._files: collections.OrderedDict[str, int] = collections.OrderedDict()  # piece name -> size
        self._indexes: collections.OrderedDict[str, SegmentIndex] = collections.OrderedDict()  # by ref.ident
        self._inflight: dict[str, Download] = {}  # by piece name; a failed one stays: its error answers a while
        self._damaged: dict[str, float] = {}  # object key -> when a piece of it was found damaged or missing
        os.makedirs(directory, exist_ok=True)
        for name in sorted(os.listdir(directory), key=lambda n: os.path.getmtime(os.path.join(directory, n))):
            if name.endswith(".tmp"):
                os.unlink(os.path.join(directory, name))
            else:
                self._files[name] = os.path.getsize(os.path.join(directory, name))

    def ensure(self, ref: SegmentRef, record_miss: bool = True) -> SegmentIndex:
        """The segment's index (its pieces from the index on are downloaded and checked), or Pending
        while they are downloaded on a thread of its own (started now if not on their way; listed
        for `collecting_misses` unless `record_miss` is false). A download that failed raises its
        error (SegmentError, ObjectStoreError) for FAILURE_KEPT seconds (the reads of one request
        move on past it), then it is tried again. With `read_wait` (a caller on a thread of its
        own: tools, tests) it waits that long first."""
        with self._lock:
            index = self._indexes.get(ref.ident)
            if index is not None:
                self._indexes.move_to_end(ref.ident)
                return index
        chunk, digests, index_at = layout(ref)
        first = index_at // chunk
        tail = self._span(ref, first, len(digests) - 1, record_miss)
        index = SegmentIndex(tail[index_at - first * chunk:], index_at)
        with self._lock:
            self._indexes[ref.ident] = index
            while len(self._indexes) > INDEXES_KEPT:
                self._indexes.popitem(last=False)
        return index

    def read(self, ref: SegmentRef, at: int, n: int) -> bytes:
        """`n` bytes at `at` of the segment object (Pending, SegmentError, ObjectStoreError as `ensure`)."""
        chunk = layout(ref)[0]
        i, j = at // chunk, (at + max(n, 1) - 1) // chunk
        return self._span(ref, i, j, True)[at - i * chunk:at - i * chunk + n]

    def prefetch(self, ref: SegmentRef) -> None:
        """Start downloading `ref`'s index unless it is cached or on its way (nobody waits for it)."""
        try:
            self.ensure(ref, record_miss=False)
        except (Pending, SegmentError, ObjectStoreError, OSError):
            pass

    def available(self, ref: SegmentRef, at: int, end: int, fetch: bool = True) -> int:
        """How far from `at` (up to `end`) the segment's bytes are in the cache, piece after piece;
        short of `end` and with `fetch`, the next piece's download is started (a miss for
        `collecting_misses`)."""
        chunk, digests, _ = layout(ref)
        last = (max(end, at + 1) - 1) // chunk
        with self._lock:
            k = at // chunk
            while k <= last and digests[k] in self._files:
                k += 1
        if k > last:
            return end
        if not fetch:
            return max(at, k * chunk)
        try:
            self._span(ref, k, k, True)
        except (Pending, SegmentError, ObjectStoreError, OSError):
            return max(at, k * chunk)
        return self.available(ref, at, end)  # downloaded meanwhile (or waited for: `read_wait`)

    def recently_damaged(self, ref: SegmentRef) -> bool:
        found = self._damaged.get(ref.key)
        return found is not None and time.monotonic() - found <= FAILURE_KEPT

    def damaged(self, ref: SegmentRef, at: int, n: int) -> bool:
        """Bytes [at, at + n) of the segment lie in a piece found damaged (or missing) lately."""
        if not self.recently_damaged(ref):
            return False
        chunk, digests, _ = layout(ref)
        with self._lock:
            for k in range(at // chunk, min(len(digests) - 1, (at + max(n, 1) - 1) // chunk) + 1):
                flight = self._inflight.get(digests[k])
                if flight is not None and isinstance(flight.error, (SegmentError, NotFound)) and \
                        time.monotonic() - flight.ended_at <= FAILURE_KEPT:
                    return True
        return False

    def _span(self, ref: SegmentRef, i: int, j: int, record_miss: bool) -> bytes:
        """Pieces i..j of the segment, checked: read from the cache, or Pending while downloaded."""
        chunk, digests, _ = layout(ref)
        with self._lock:
            missing = [k for k in range(i, j + 1) if digests[k] not in self._files]
            flight = None
            for k in missing:
                found = self._inflight.get(digests[k])
                if found is not None and found.done.is_set() and time.monotonic() - found.ended_at > FAILURE_KEPT:
                    del self._inflight[digests[k]]  # failed a while ago: fetched again
                    found = None
                if found is not None:
                    flight = found
                    break
            if missing and flight is None:
                lo, hi = missing[0], missing[-1]
                if lo > 0 and digests[lo - 1] in self._files:  # a sequential reader: read ahead
                    hi = min(len(digests) - 1, hi + READAHEAD)
                flight = Download()
                for k in range(lo, hi + 1):
                    if digests[k] not in self._files:
                        self._inflight.setdefault(digests[k], flight)
                threading.Thread(target=self._download, args=(ref, lo, hi, flight), daemon=True,
                                 name="tier-download").start()
            for k in range(i, j + 1):
                if digests[k] in self._files:
                    self._files.move_to_end(digests[k])
        if flight is not None:
            done = flight.done.wait(self.read_wait) if self.read_wait > 0 else flight.done.is_set()
            if not done:
                misses = _MISSES.get()
                if record_miss and misses is not None:
                    misses.append(flight)
                raise Pending(ref.key)
            if flight.error is not None and any(self._inflight.get(digests[k]) is flight for k in missing):
                raise flight.error
            return self._span(ref, i, j, record_miss)
        try:
            parts = []
            for k in range(i, j + 1):
                with open(os.path.join(self.dir, digests[k]), "rb") as f:
                    parts.append(f.read())
            return b"".join(parts)
        except FileNotFoundError:  # evicted meanwhile: fetched again
            with self._lock:
                for k in range(i, j + 1):
                    if not os.path.exists(os.path.join(self.dir, digests[k])):
                        self._files.pop(digests[k], None)
            return self._span(ref, i, j, record_miss)

    def _download(self, ref: SegmentRef, lo: int, hi: int, flight: Download) -> None:
        """Pieces lo..hi with one ranged GET; each checked, kept if good."""
        chunk, digests, _ = layout(ref)
        sums = ref.chunks or (ref.sha256,)
        kept: list[str] = []
        try:
            start = lo * chunk
            data = self.objects.get(ref.key, start, min((hi + 1) * chunk, ref.size))
            self.stats.remote_read(ref.topic, len(data))
            bad = []
            for k in range(lo, hi + 1):
                piece = data[(k - lo) * chunk:(k - lo + 1) * chunk]
                if len(piece) != min(chunk, ref.size - k * chunk) or checksum(ref.checksum, piece) != sums[k]:
                    bad.append(k)
                    continue
                path = os.path.join(self.dir, digests[k])
                with open(path + ".tmp", "wb") as f:
                    f.write(piece)
                os.replace(path + ".tmp", path)
                kept.append(digests[k])
                with self._lock:
                    self._files[digests[k]] = len(piece)
                    if self._inflight.get(digests[k]) is flight:
                        del self._inflight[digests[k]]
            if bad:
                self.stats.error("checksum")
                log.error("tier: segment %s: bytes %d..%d (of %d) do not match the checksums its manifest "
                          "lists: not served", ref.key, bad[0] * chunk, min((bad[-1] + 1) * chunk, ref.size), ref.size)
                raise SegmentError(f"{ref.key}: checksum mismatch")
        except Exception as exc:  # handed to the readers that ask for the pieces not kept
            if isinstance(exc, (NotFound, SegmentError)):
                self._damaged[ref.key] = time.monotonic()
            if isinstance(exc, NotFound):
                self.stats.error("missing")
                log.error("tier: segment %s is missing from the object store: not served", ref.key)
            elif not isinstance(exc, SegmentError):
                self.stats.error("read")
            flight.error = exc
        finally:
            with self._lock:
                self._evict(keep=set(kept))
            flight.finish()

    def _evict(self, keep: set) -> None:
        total = sum(self._files.values())
        for name in list(self._files):
            if total <= self.max_bytes:
                break
            if name in keep:
                continue
            total -= self._files.pop(name)
            try:
                os.unlink(os.path.join(self.dir, name))
            except FileNotFoundError:
                pass

    def cached_bytes(self) -> int:
        with self._lock:
            return sum(self._files.values())


_NAMES: dict[str, tuple] = {}  # ref.ident -> its pieces' file names (CRC32C refs)


def layout(ref: SegmentRef) -> tuple[int, tuple, int]:
    """(piece size, the pieces' cache file names, where the index starts) of a segment object; one
    uploaded before pieces were recorded is one piece, read whole. A SHA-256 piece is named by its
    digest; a CRC32C one (32 bits: not unique) by its object, place and CRC."""
    if not ref.chunks:
        return max(ref.size, 1), (ref.sha256,), 0
    if ref.checksum == "sha256":
        return ref.chunk, ref.chunks, ref.index_at
    names = _NAMES.get(ref.ident)
    if names is None:
        if len(_NAMES) > 65536:
            _NAMES.clear()
        stem = hashlib.sha256(ref.ident.encode()).hexdigest()[:32]
        names = _NAMES[ref.ident] = tuple(f"{stem}-{k}-{c}" for k, c in enumerate(ref.chunks))
    return ref.chunk, names, ref.index_at
