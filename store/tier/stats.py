"""Tier counters (read by the gateway's metrics collector): bytes uploaded and read per topic,
errors by kind (the upload lag is counted when scraped: gateway.tier_service). Updated from
worker threads under one lock."""
from __future__ import annotations

import threading


class TierStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.uploaded_bytes: dict[str, int] = {}
        self.remote_read_bytes: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.uploads = 0

    def uploaded(self, topic: str, n: int) -> None:
        with self._lock:
            self.uploaded_bytes[topic] = self.uploaded_bytes.get(topic, 0) + n

    def remote_read(self, topic: str, n: int) -> None:
        with self._lock:
            self.remote_read_bytes[topic] = self.remote_read_bytes.get(topic, 0) + n

    def error(self, kind: str) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1
