"""Bytes each topic holds in the local CommitLog files (Kafka's local log size, next to the tier's
RemoteLogSizeBytes). One CommitLog holds every topic, so the bytes are counted per file and topic:
entries appended by this process as a dispatcher (store.dispatch) sees them, entries written before
it started by walking those files once, on the upload service's thread. A file's count goes with
the file."""
from __future__ import annotations

import threading

from store.tier.entries import scan


def _no_topic(_topic: str) -> bool:
    """Only each entry's topic and size are counted: nothing else of it is parsed."""
    return False


class LocalBytes:
    def __init__(self, file_size: int, counted_from: int) -> None:
        self.file_size = file_size
        self.counted_from = counted_from  # entries from here on reach `dispatch`; before: `backfill`
        self._lock = threading.Lock()
        self._files: dict[int, dict[str, int]] = {}  # file start -> {topic: bytes}
        self._walked: set[int] = set()  # files whose part before `counted_from` is counted

    def dispatch(self, requests) -> None:
        with self._lock:
            for r in requests:
                start = r.physical_offset - r.physical_offset % self.file_size
                per_topic = self._files.setdefault(start, {})
                per_topic[r.topic] = per_topic.get(r.topic, 0) + r.size

    def backfill(self, starts, read_file) -> None:
        """Count the entries written before this process of each file in `starts` not walked yet;
        `read_file(start)` is the file's bytes (None: gone meanwhile). Blocking: a worker thread's."""
        for start in starts:
            with self._lock:
                if start in self._walked:
                    continue
            if start < self.counted_from:
                data = read_file(start)
                counts: dict[str, int] = {}
                for e in scan(data[:self.counted_from - start] if data else b"", start, _no_topic):
                    counts[e.topic] = counts.get(e.topic, 0) + e.size
                with self._lock:
                    per_topic = self._files.setdefault(start, {})
                    for topic, n in counts.items():
                        per_topic[topic] = per_topic.get(topic, 0) + n
            with self._lock:
                self._walked.add(start)

    def by_topic(self, starts) -> dict[str, int]:
        """{topic: bytes} over the local files `starts` (the counts of files gone are dropped)."""
        live = set(starts)
        out: dict[str, int] = {}
        with self._lock:
            for start in [s for s in self._files if s not in live]:
                del self._files[start]
            self._walked &= live
            for per_topic in self._files.values():
                for topic, n in per_topic.items():
                    out[topic] = out.get(topic, 0) + n
        return out
