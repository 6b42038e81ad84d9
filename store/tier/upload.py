"""One round of the upload service's work, blocking (the gateway runs it on a worker thread): copy
each sealed, flushed CommitLog file not yet committed to the tier (per-queue segments, then the
manifest with if_absent: the commit), apply remote retention and topic deletions, and keep the
topic table's copy current. Any ObjectStoreError ends the round; the caller retries with backoff."""
from __future__ import annotations

import json
import logging
import os
import threading
import time

import store.faults as faults
from store.objstore.api import PreconditionFailed
from store.store import LOG_STARTS
from store.tier import segment
from store.tier.payload import crc32c_sums
from store.tier.manifest import OFFSETS_FILE, OFFSETS_KEY, TOPICS_KEY, Manifest, SegmentRef, manifest_key, \
    segment_key

log = logging.getLogger("rocketgate.tier")
_MAX_READ = 1 << 30  # Linux reads at most ~2 GiB per call


def _flag(attributes: dict, name: str) -> bool:
    return str(attributes.get(name, "false")).strip().lower() == "true"


def is_tiered(attributes: dict) -> bool:
    """remote.storage.enable=true on a topic that is not compacted (Kafka refuses that combination)."""
    return _flag(attributes, "remote.storage.enable") and "compact" not in str(attributes.get("cleanup.policy", "delete"))


def copies(attributes: dict) -> bool:
    """New data of the topic goes to the tier (tiered, and remote.log.copy.disable not set)."""
    return is_tiered(attributes) and not _flag(attributes, "remote.log.copy.disable")


def drops_remote(attributes: dict) -> bool:
    """Remote storage turned off with remote.log.delete.on.disable: the topic's remote data goes."""
    return not is_tiered(attributes) and _flag(attributes, "remote.log.delete.on.disable")


class Bandwidth:
    """Bytes per second the uploads may use (a token bucket a second deep); None: unbounded."""

    def __init__(self, rate: int | None) -> None:
        self.rate = rate
        self._lock = threading.Lock()
        self._free_at = time.monotonic()

    def take(self, n: int) -> None:
        if not self.rate:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now - 1.0, self._free_at)
            self._free_at = start + n / self.rate
            wait = self._free_at - now - 1.0
        if wait > 0:
            time.sleep(wait)


def pending_files(store) -> list[int]:
    """Starts of sealed, flushed CommitLog files whose upload is not committed, oldest first."""
    with store._lock:
        cl = store.commitlog
        limit = min(store.flushed_offset, cl.end)
        return [s for s in cl.starts if s + cl.file_size <= limit and not store.remote.is_committed(s)]


def _read_file(store, start: int) -> bytes | None:
    with store._lock:
        rng = store.commitlog.open_range(start, 8)  # a new fd: retention may unlink the file meanwhile
    if rng is None:
        return None
    fd = rng[0]
    try:  # one read of the whole file (a regular file answers it whole): no copy to join pieces
        parts, pos, size = [], 0, store.commitlog.file_size
        while pos < size:
            chunk = os.pread(fd, min(size - pos, _MAX_READ), pos)
            if not chunk:
                break
            parts.append(chunk)
            pos += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def upload_file(store, start: int, bandwidth: Bandwidth) -> Manifest | None:
    """Upload one sealed file and commit it; the committed manifest (another run's, if it won)."""
    data = _read_file(store, start)
    if data is None:
        return None

    def tiered(topic: str) -> bool:
        cfg = store.topics.get(topic)
        return cfg is not None and copies(cfg.attributes)

    untiered: set = set()
    built = segment.build(data, start, tiered, untiered)
    refs = []
    chunk = segment.chunk_size(store.commitlog.file_size)
    for (topic, qid), seg in sorted(built.items()):
        payload = seg.payload(data)
        first, last = seg.rows[0], seg.rows[-1]
        key = segment_key(topic, qid, start, first[0])
        whole, pieces = crc32c_sums(payload, chunk)  # one pass; the server checks the body against `whole`
        bandwidth.take(len(payload))
        store.objects.put(key, payload, crc32c=whole)
        store.tier_stats.uploaded(topic, len(payload))
        refs.append(SegmentRef(topic, qid, first[0], last[0] + last[1], key, len(payload), "", start, first[2],
                               last[2] + last[3], first[4], last[4], seg.index_at, chunk, pieces, "crc32c",
                               f"{whole:08x}", seg.min_record_ts, seg.max_record_ts))
    manifest = Manifest(start, store.commitlog.file_size, refs, sorted(t for t in untiered if t in store.topics))
    try:
        store.objects.put(manifest_key(start), manifest.encode(), if_absent=True)
        faults.reached("commit")  # a test's kill -9 between the commit and the local delete
    except PreconditionFailed:  # committed before (a restart after the commit): that one stands
        manifest = Manifest.decode(store.objects.get(manifest_key(start)))
    store.remote.add(manifest)
    store.tier_stats.uploads += 1
    return manifest


def expire_remote(store) -> int:
    """Delete the segments of deleted topics and those wholly below a queue's log start (Kafka's
    retention.ms / retention.bytes and DeleteRecords move it: semantics.retention); the topic's
    starts object is written first, so a crash in between leaves objects no reader uses."""
    remote = store.remote
    starts = store.read_config(LOG_STARTS, {}) or {}
    deleted = 0
    for topic in sorted(remote.topics()):
        cfg = store.topics.get(topic)
        gone = topic in store.deleted_topics or cfg is None or drops_remote(cfg.attributes)
        doc = dict(remote.starts.get(topic) or {"file": -1, "queues": {}})
        doc["queues"] = dict(doc.get("queues") or {})
        doomed = []
        for _topic, qid in remote.queue_keys(topic):
            low = int((starts.get(topic) or {}).get(str(qid), 0))
            refs = remote.live(topic, qid)
            cut = [r for r in refs if gone or r.end <= low]
            if cut and not gone:
                doc["queues"][str(qid)] = max(low, int(doc["queues"].get(str(qid), 0)))
            doomed += cut
        if gone and doomed:
            doc = {"file": remote.committed_end, "queues": {}}
        if doomed:
            remote.set_starts(topic, doc)
            for ref in doomed:
                store.objects.delete(ref.key)
            remote.forget(doomed)
            deleted += len(doomed)
            log.info("tier: deleted %d remote segments of %s", len(doomed), topic)
    store.deleted_topics.clear()
    return deleted


def sync_object(store, key: str, doc, last: bytes | None) -> bytes:
    """Write `doc` to the tier at `key` when it changed since `last`; returns what is there now."""
    data = json.dumps(doc, sort_keys=True).encode()
    if data != last:
        store.objects.put(key, data)
    return data


def sync_topics(store, last: bytes | None) -> bytes:
    """The topic table's copy in the tier."""
    return sync_object(store, TOPICS_KEY, store.topics._document()["topicConfigTable"], last)


def sync_offsets(store, last: bytes | None) -> bytes:
    """The consumer offsets' copy in the tier, as last written to the data dir (every few seconds:
    after a disk loss a group resumes at most that much earlier, reading some records again)."""
    return sync_object(store, OFFSETS_KEY, store.read_config(OFFSETS_FILE, {}) or {}, last)


class Uploader:
    """The state between rounds: the topic table and offsets last written, the bandwidth bound."""

    def __init__(self, store, bytes_per_second: int | None = None) -> None:
        self.store = store
        self.bandwidth = Bandwidth(bytes_per_second)
        self._topics: bytes | None = None
        self._offsets: bytes | None = None

    def round(self) -> int:
        """One round (blocking); returns how many files it committed."""
        store = self.store
        if store.local_bytes is not None:  # needs no object store
            store.local_bytes.backfill(list(store.commitlog.starts), lambda start: _read_file(store, start))
        if not store.remote.loaded:  # unreachable at startup: nothing is committed or deleted before this
            store.remote.load()
            log.info("tier: %d manifests read", len(store.remote.manifests))
        self._topics = sync_topics(store, self._topics)
        self._offsets = sync_offsets(store, self._offsets)
        done = 0
        for start in pending_files(store):
            if upload_file(store, start, self.bandwidth) is not None:
                done += 1
        expire_remote(store)
        return done
