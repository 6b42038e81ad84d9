"""The bounded on-disk read cache: whole segment objects, checked against their manifest's size and
sha256 before they are kept, evicted least recently used beyond `max_bytes`. A segment that fails
the check is not served (SegmentError) and is fetched again on the next read."""
from __future__ import annotations

import collections
import logging
import os
import threading

from store.tier.manifest import SegmentRef
from store.tier.segment import SegmentError, SegmentIndex, digest

log = logging.getLogger("rocketgate.tier")
INDEXES_KEPT = 256


class SegmentCache:
    def __init__(self, directory: str, objects, max_bytes: int, stats) -> None:
        self.dir = directory
        self.objects = objects
        self.max_bytes = max_bytes
        self.stats = stats
        self._lock = threading.Lock()
        self._files: collections.OrderedDict[str, int] = collections.OrderedDict()  # sha256 -> size
        self._indexes: collections.OrderedDict[str, SegmentIndex] = collections.OrderedDict()
        os.makedirs(directory, exist_ok=True)
        for name in sorted(os.listdir(directory), key=lambda n: os.path.getmtime(os.path.join(directory, n))):
            if name.endswith(".tmp"):
                os.unlink(os.path.join(directory, name))
            else:
                self._files[name] = os.path.getsize(os.path.join(directory, name))

    def _path(self, ref: SegmentRef) -> str:
        return os.path.join(self.dir, ref.sha256)

    def ensure(self, ref: SegmentRef) -> SegmentIndex:
        """The segment's index, downloading and checking the object first when it is not cached."""
        with self._lock:
            index = self._indexes.get(ref.sha256)
            if index is not None and ref.sha256 in self._files:
                self._indexes.move_to_end(ref.sha256)
                self._files.move_to_end(ref.sha256)
                return index
        path = self._path(ref)
        if ref.sha256 in self._files and os.path.exists(path):
            with open(path, "rb") as f:
                payload = f.read()
        else:
            payload = self.objects.get(ref.key)
            self.stats.remote_read(ref.topic, len(payload))
            if len(payload) != ref.size or digest(payload) != ref.sha256:
                self.stats.error("checksum")
                log.error("tier: segment %s is %d bytes with another checksum than its manifest says "
                          "(%d bytes): not served", ref.key, len(payload), ref.size)
                raise SegmentError(f"{ref.key}: checksum mismatch")
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(payload)
            os.replace(tmp, path)
        index = SegmentIndex(payload)
        with self._lock:
            self._files[ref.sha256] = len(payload)
            self._files.move_to_end(ref.sha256)
            self._indexes[ref.sha256] = index
            while len(self._indexes) > INDEXES_KEPT:
                self._indexes.popitem(last=False)
            self._evict(keep=ref.sha256)
        return index

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
        except FileNotFoundError:  # evicted meanwhile
            self.ensure(ref)
            with open(self._path(ref), "rb") as f:
                return os.pread(f.fileno(), n, at)

    def cached_bytes(self) -> int:
        with self._lock:
            return sum(self._files.values())
