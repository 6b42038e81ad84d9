"""The bounded on-disk read cache: whole segment objects, checked against their manifest's size and
sha256 before they are kept, evicted least recently used beyond `max_bytes`. A segment that fails
the check is not served (SegmentError) and is fetched again on the next read."""
from __future__ import annotations

import collections
import logging
import os
import threading

from store.objstore.api import NotFound, ObjectStoreError
from store.tier.manifest import SegmentRef
from store.tier.segment import SegmentError, SegmentIndex, digest

log = logging.getLogger("rocketgate.tier")
INDEXES_KEPT = 256
MISS_WAIT = 0.5  # seconds a reader waits for a download it started, at most once per download


class Pending(Exception):
    """The segment is being downloaded: try again shortly (the reader serves nothing for now)."""


class _Download:
    __slots__ = ("done", "error", "waited")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.waited = False  # a reader waited for it (a prefetch does not)


class SegmentCache:
    def __init__(self, directory: str, objects, max_bytes: int, stats) -> None:
        self.dir = directory
        self.objects = objects
        self.max_bytes = max_bytes
        self.stats = stats
        self._lock = threading.Lock()
        self._files: collections.OrderedDict[str, int] = collections.OrderedDict()  # sha256 -> size
        self._indexes: collections.OrderedDict[str, SegmentIndex] = collections.OrderedDict()
        self._inflight: dict[str, _Download] = {}
        os.makedirs(directory, exist_ok=True)
        for name in sorted(os.listdir(directory), key=lambda n: os.path.getmtime(os.path.join(directory, n))):
            if name.endswith(".tmp"):
                os.unlink(os.path.join(directory, name))
            else:
                self._files[name] = os.path.getsize(os.path.join(directory, name))

    def _path(self, ref: SegmentRef) -> str:
        return os.path.join(self.dir, ref.sha256)

    def ensure(self, ref: SegmentRef, wait: float = MISS_WAIT) -> SegmentIndex:
        """The segment's index. A segment not cached is downloaded on a thread of its own; the caller
        waits at most `wait` seconds for it (one reader per download), then gets Pending and tries again
        later: a slow or stopped object store never holds the event loop for longer than that.
        A download that failed raises its error (SegmentError, ObjectStoreError) once."""
        with self._lock:
            index = self._indexes.get(ref.sha256)
            if index is not None and ref.sha256 in self._files:
                self._indexes.move_to_end(ref.sha256)
                self._files.move_to_end(ref.sha256)
                return index
            cached = ref.sha256 in self._files
            flight = self._inflight.get(ref.sha256)
            if flight is None and not cached:
                flight = self._inflight[ref.sha256] = _Download()
                flight.waited = wait > 0
                threading.Thread(target=self._download, args=(ref, flight), daemon=True,
                                 name="tier-download").start()
            elif flight is not None and wait > 0:
                if flight.waited:
                    wait = 0.0  # a reader already waited for this download: no second stall
                flight.waited = True
        if cached and flight is None:
            return self._remember(ref, self._read_whole(ref))
        if not flight.done.wait(wait):
            raise Pending(ref.key)
        with self._lock:
            self._inflight.pop(ref.sha256, None)
        if flight.error is not None:
            raise flight.error
        return self.ensure(ref, 0.0)

    def prefetch(self, ref: SegmentRef) -> None:
        """Start downloading `ref` unless it is cached or on its way."""
        try:
            self.ensure(ref, 0.0)
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

    def _download(self, ref: SegmentRef, flight: "_Download") -> None:
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
        except Exception as exc:  # handed to the reader that asks next
            if isinstance(exc, NotFound):
                self.stats.error("missing")
                log.error("tier: segment %s is missing from the object store: not served", ref.key)
            elif not isinstance(exc, SegmentError):
                self.stats.error("read")
            flight.error = exc
        finally:
            flight.done.set()

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
