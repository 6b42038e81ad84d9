"""The bounded on-disk read cache: whole segment objects, checked against their manifest's size and
sha256 before they are kept, evicted least recently used beyond `max_bytes`. A segment that fails
the check is not served (SegmentError) and is fetched again on the next read.

A reader never waits for a download on its own thread (the gateway's readers run on its event
loop): a segment not cached is downloaded on a thread of its own and the reader gets Pending at
once. Inside `collecting_misses()` those downloads are listed, so the gateway can await them off
the loop (`Download.when_done`) and read again (gateway.tier_reads)."""
from __future__ import annotations

import collections
import contextlib
import contextvars
import logging
import os
import threading
import time

from store.objstore.api import NotFound, ObjectStoreError
from store.tier.manifest import SegmentRef
from store.tier.segment import SegmentError, SegmentIndex, digest

log = logging.getLogger("rocketgate.tier")
INDEXES_KEPT = 256
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
        self._files: collections.OrderedDict[str, int] = collections.OrderedDict()  # sha256 -> size
        self._indexes: collections.OrderedDict[str, SegmentIndex] = collections.OrderedDict()
        self._inflight: dict[str, Download] = {}  # a failed one stays: its error answers for a while
        os.makedirs(directory, exist_ok=True)
        for name in sorted(os.listdir(directory), key=lambda n: os.path.getmtime(os.path.join(directory, n))):
            if name.endswith(".tmp"):
                os.unlink(os.path.join(directory, name))
            else:
                self._files[name] = os.path.getsize(os.path.join(directory, name))

    def _path(self, ref: SegmentRef) -> str:
        return os.path.join(self.dir, ref.sha256)

    def ensure(self, ref: SegmentRef, record_miss: bool = True) -> SegmentIndex:
        """The segment's index, or Pending while it is downloaded on a thread of its own (started
        now if it is not on its way; listed for `collecting_misses` unless `record_miss` is false).
        A download that failed raises its error (SegmentError, ObjectStoreError) for FAILURE_KEPT
        seconds (the reads of one request move on past it), then the segment is fetched again. With
        `read_wait` (a caller on a thread of its own: tools, tests) it waits that long first."""
        with self._lock:
            index = self._indexes.get(ref.sha256)
            if index is not None and ref.sha256 in self._files:
                self._indexes.move_to_end(ref.sha256)
                self._files.move_to_end(ref.sha256)
                return index
            cached = ref.sha256 in self._files
            flight = self._inflight.get(ref.sha256)
            if flight is not None and flight.done.is_set() and time.monotonic() - flight.ended_at > FAILURE_KEPT:
                flight = None  # failed a while ago: fetched again
            if flight is None and not cached:
                flight = self._inflight[ref.sha256] = Download()
                threading.Thread(target=self._download, args=(ref, flight), daemon=True,
                                 name="tier-download").start()
        if cached:
            return self._remember(ref, self._read_whole(ref))
        done = flight.done.wait(self.read_wait) if self.read_wait > 0 else flight.done.is_set()
        if not done:
            misses = _MISSES.get()
            if record_miss and misses is not None:
                misses.append(flight)
            raise Pending(ref.key)
        if flight.error is not None:
            raise flight.error
        return self.ensure(ref, record_miss)

    def prefetch(self, ref: SegmentRef) -> None:
        """Start downloading `ref` unless it is cached or on its way (nobody waits for it)."""
        try:
            self.ensure(ref, record_miss=False)
        except (Pending, SegmentError, ObjectStoreError, OSError):
            pass

    def _read_whole(self, ref: SegmentRef) -> bytes:
        with open(self._path(ref), "rb") as f:
            return f.read()

    def _remember(self, ref: SegmentRef, payload: bytes) -> SegmentIndex:
        index = SegmentIndex(payload)
        with self._lock:
            self._files[ref.sha256] = len(payload)
            self._files.move_to_end(ref.sha256)
            self._indexes[ref.sha256] = index
            while len(self._indexes) > INDEXES_KEPT:
                self._indexes.popitem(last=False)
            self._evict(keep=ref.sha256)
        return index

    def _download(self, ref: SegmentRef, flight: Download) -> None:
        try:
            payload = self.objects.get(ref.key)
            self.stats.remote_read(ref.topic, len(payload))
            if len(payload) != ref.size or digest(payload) != ref.sha256:
                self.stats.error("checksum")
                log.error("tier: segment %s is %d bytes with another checksum than its manifest says "
                          "(%d bytes): not served", ref.key, len(payload), ref.size)
                raise SegmentError(f"{ref.key}: checksum mismatch")
            path = self._path(ref)
            with open(path + ".tmp", "wb") as f:
                f.write(payload)
            os.replace(path + ".tmp", path)
            self._remember(ref, payload)
            with self._lock:
                self._inflight.pop(ref.sha256, None)
        except Exception as exc:  # handed to the reader that asks next
            if isinstance(exc, NotFound):
                self.stats.error("missing")
                log.error("tier: segment %s is missing from the object store: not served", ref.key)
            elif not isinstance(exc, SegmentError):
                self.stats.error("read")
            flight.error = exc
        finally:
            flight.finish()

    def _evict(self, keep: str) -> None:
        total = sum(self._files.values())
        for name in list(self._files):
            if total <= self.max_bytes:
                break
            if name == keep:
                continue
            total -= self._files.pop(name)
            self._indexes.pop(name, None)
            try:
                os.unlink(os.path.join(self.dir, name))
            except FileNotFoundError:
                pass

    def read(self, ref: SegmentRef, at: int, n: int) -> bytes:
        """`n` bytes at `at` of a segment `ensure` has cached."""
        try:
            with open(self._path(ref), "rb") as f:
                return os.pread(f.fileno(), n, at)
        except FileNotFoundError:  # evicted meanwhile: the reader tries again
            return b""

    def cached_bytes(self) -> int:
        with self._lock:
            return sum(self._files.values())
