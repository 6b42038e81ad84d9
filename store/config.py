"""Config files under `<store>/config/`, each written atomically (temp file, fsync, rename, fsync dir),
the batched off-loop writer of the ones that change often (offsets, delay and transaction progress),
and the topic table kept in `config/topics.json` (RocketMQ's topicConfigTable layout), with its
journal `config/topics.journal` (store.topic_journal) when the gateway's writer runs."""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import store.faults as faults
from store.topic_journal import TopicJournal, recover

log = logging.getLogger("rocketgate.store")


def read_json(path: str):
    """The JSON document in `path`, None if there is no such file; ValueError if it is not JSON."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None


def atomic_write(path: str, data: bytes, mode: int = 0o644) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new content
    (`mode`: the new file's permissions, e.g. 0o600 for secrets)."""
    directory = os.path.dirname(path) or "."
    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[faults.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:  # ENOSPC, EINTR...: the old content stays, no temp file is left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class ConfigDir:
    """JSON documents by name; a name without an extension gets `.json`."""

    def __init__(self, directory: str) -> None:
        self.dir = directory
        os.makedirs(directory, exist_ok=True)

    def path(self, name: str) -> str:
        if os.sep in name or name.startswith("."):
            raise ValueError(f"bad config name {name!r}")
        return os.path.join(self.dir, name if "." in name else name + ".json")

    def write(self, name: str, obj) -> None:
        self.write_bytes(name, json.dumps(obj, ensure_ascii=False, indent=1).encode())

    def write_bytes(self, name: str, data: bytes) -> None:
        atomic_write(self.path(name), data)

    def read(self, name: str, default=None):
        """The document, or `default` if there is none; an unreadable one is moved aside (logged)."""
        path = self.path(name)
        try:
            doc = read_json(path)
            return default if doc is None else doc
        except ValueError as exc:
            log.error("config %s is not valid JSON (%s): moved to %s.corrupt", path, exc, path)
            os.replace(path, path + ".corrupt")
            return default


@runtime_checkable
class SelfWriting(Protocol):
    """A submission that writes itself (a journal appending its queued records) instead of being
    written as one JSON document; `write()` blocks and raises OSError like a document write."""

    def write(self) -> None: ...


class ConfigWriter:
    """Config documents handed over by the event loop (`submit`, cheap) and written by a worker
    thread (`write_pending`; the gateway's writer service runs it). Submissions of one name
    coalesce: only the newest document of each name is written. Submissions are numbered;
    `is_written(name, n)` tells whether submission `n` of `name` (or a newer one) is on disk. A
    failed write (EMFILE, ENOSPC, ...) keeps its document pending for the next try, unless a
    newer one of that name came in meanwhile. A SelfWriting submission is written by calling it."""

    def __init__(self, config: ConfigDir) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, object]] = {}  # name -> (number, document)
        self._written: dict[str, int] = {}  # name -> number of the newest document on disk
        self._count = 0

    def submit(self, name: str, obj) -> int:
        """Queue `obj` as the new content of config `name`; returns its number."""
        with self._lock:
            self._count += 1
            self._pending[name] = (self._count, obj)
            return self._count

    def has_pending(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def is_written(self, name: str, number: int) -> bool:
        with self._lock:
            return self._written.get(name, 0) >= number

    def write_pending(self) -> None:
        """Write every pending document (blocking: call it from a worker thread or at shutdown).
        Raises the first OSError after trying them all; the failed ones stay pending."""
        with self._lock:
            batch, self._pending = self._pending, {}
        failure = None
        for name, (number, obj) in batch.items():
            try:
                if isinstance(obj, SelfWriting):
                    obj.write()
                else:
                    self._config.write(name, obj)
            except OSError as exc:
                failure = failure or exc
                with self._lock:
                    self._pending.setdefault(name, (number, obj))
                continue
            with self._lock:
                self._written[name] = max(self._written.get(name, 0), number)
        if failure is not None:
            raise failure


@dataclass
class TopicConfig:
    name: str
    read_queues: int = 8
    write_queues: int = 8
    perm: int = 6
    attributes: dict = field(default_factory=dict)
    topic_id: bytes = b""  # KIP-516's UUID (16 bytes), made with the topic and stored with it


_LEGACY_IDS = uuid.UUID("6b1f5c8e-4d0a-4e53-9a6f-2f6d1c3b7a90").bytes  # namespace of the name-derived ids


def legacy_topic_id(name: str) -> bytes:
    """The id of a topic stored before ids were (`uuid5` of its name in the gateway's namespace):
    what such topics were always answered with, so their clients and committed offsets keep it."""
    digest = bytearray(hashlib.sha1(_LEGACY_IDS + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    return bytes(digest)


def new_topic_id() -> bytes:
    """A random topic id as Kafka makes them (Uuid.randomUuid): never the zero id nor Kafka's
    metadata topic id (1), and its base64 form never starts with '-' (tools take it for a flag)."""
    while True:
        tid = uuid.uuid4().bytes
        if int.from_bytes(tid, "big") > 1 and not base64.urlsafe_b64encode(tid).startswith(b"-"):
            return tid


def parse_topic_id(text) -> bytes | None:
    """The 16 bytes of a stored id (canonical UUID text), None if absent or malformed."""
    try:
        return uuid.UUID(text).bytes if isinstance(text, str) else None
    except ValueError:
        return None


class TopicTable:
    """Topic configs, persisted on every change. Written in place (the whole config/topics.json)
    until `use_writer` hands them to the gateway's off-loop ConfigWriter: from then on each change
    is one record of config/topics.journal, with topics.json rewritten now and then by a thread
    (store.topic_journal). With sync flush the writer's thread appends and fsyncs each change and
    `submission` numbers the newest one, for callers that answer only once it is on disk; with
    async flush the change is appended at once (it survives a kill -9) and fsynced by the store's
    flusher (`sync_journal`), so `submission` moves only when a failed append is left to the writer."""

    FILE = "topics.json"  # also the writer's name of the journal's submissions

    def __init__(self, config: ConfigDir, on_delete=None) -> None:
        self._config = config
        self._on_delete = on_delete
        self._writer = None  # has `submit(name, document) -> number` (the gateway's writer service)
        self._journal: TopicJournal | None = None  # with the writer
        self.submission = 0  # the writer's number of the newest submitted change (0: none)
        self.on_create = None  # called with each new TopicConfig (a cluster member publishes it)
        self.on_deleted = None  # called with each deleted topic's name (likewise)
        self.on_updated = None  # called with each changed TopicConfig (likewise: configs, perm)
        self._topics: dict[str, TopicConfig] = {}
        self._by_id: dict[bytes, str] = {}  # topic id -> name
        self._id_of: dict[str, bytes] = {}  # name -> the id _by_id has it under
        self._dirty = False  # the last write failed
        table, self._version = recover(config)
        for name, t in table.items():
            try:
                self._topics[name] = TopicConfig(
                    name=name, read_queues=int(t.get("readQueueNums", 8)), write_queues=int(t.get("writeQueueNums", 8)),
                    perm=int(t.get("perm", 6)), attributes=dict(t.get("attributes") or {}),
                    topic_id=parse_topic_id(t.get("topicId")) or legacy_topic_id(name))
            except (AttributeError, TypeError, ValueError) as exc:  # a hand-edited or damaged entry
                log.error("topics: entry %r cannot be read (%s): skipped", name, exc)
        for cfg in self._topics.values():
            self._index_id(cfg)

    def get(self, name: str) -> TopicConfig | None:
        return self._topics.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._topics

    def names(self) -> list[str]:
        return list(self._topics)

    def name_of_id(self, topic_id: bytes) -> str | None:
        """The existing topic whose id is `topic_id`, or None."""
        return self._by_id.get(bytes(topic_id))

    def create(self, name: str, read_queues: int = 8, write_queues: int = 8, perm: int = 6,
               attributes: dict | None = None, topic_id: bytes | None = None) -> TopicConfig:
        """A new topic, with a new random id unless `topic_id` (a cluster's agreed one) is given."""
        cfg = TopicConfig(name, read_queues, write_queues, perm, dict(attributes or {}), topic_id or new_topic_id())
        self._topics[name] = cfg
        self._index_id(cfg)
        self._persist(name)
        if self.on_create is not None:
            self.on_create(cfg)
        return cfg

    def update(self, cfg: TopicConfig) -> None:
        self._topics[cfg.name] = cfg
        self._index_id(cfg)
        self._persist(cfg.name)
        if self.on_updated is not None:
            self.on_updated(cfg)

    def delete(self, name: str) -> None:
        self._forget_id(name)
        if self._topics.pop(name, None) is not None:
            self._persist(name)
        if self._on_delete is not None:
            self._on_delete(name)
        if self.on_deleted is not None:
            self.on_deleted(name)

    def _index_id(self, cfg: TopicConfig) -> None:
        self._forget_id(cfg.name)
        self._by_id[cfg.topic_id] = cfg.name
        self._id_of[cfg.name] = cfg.topic_id

    def _forget_id(self, name: str) -> None:
        """Drop the index entry of `name` (by the id indexed: its cfg may carry a new one, see `update`)."""
        tid = self._id_of.pop(name, None)
        if tid is not None and self._by_id.get(tid) == name:
            del self._by_id[tid]

    @property
    def data_version(self) -> dict:
        return {"counter": self._version, "timestamp": int(time.time() * 1000)}

    def use_writer(self, writer, sync: bool = True) -> None:
        """From now on, changes are journalled; with `sync` (the store's flush mode) each is submitted
        to `writer.submit(name, journal)`, which returns the submission's number and has a worker
        thread write it; without, only a change whose append failed is (to be retried)."""
        self._journal = TopicJournal(self._config, self._document()["topicConfigTable"], self._version, sync)
        self._writer = writer
        if self._dirty:  # the last in-place write failed: journal every topic, as a change
            self._dirty = False
            for name in self._topics:
                self._persist(name)

    def close(self) -> None:
        """Fold the journal into topics.json (a clean stop leaves the file current); Store.close calls it."""
        if self._journal is not None:
            self._journal.close()
            self._journal = self._writer = None

    def sync_journal(self) -> None:
        """fdatasync the journal's new records (the store's flusher thread; they wait for it in async mode)."""
        journal = self._journal
        if journal is not None:
            journal.sync()

    def persist_if_dirty(self) -> None:
        """Write the table again if the last in-place write failed (retention calls this every minute)."""
        if self._dirty:
            self._persist(None)

    def _persist(self, name: str | None) -> None:
        """Journal the change of topic `name`, or write the table in place; an in-place failure
        (ENOSPC, EMFILE, ...) keeps the change in memory, is logged and tried again with the next
        change or `persist_if_dirty` (the old file stays whole)."""
        self._version += 1
        if self._journal is not None:
            cfg = self._topics.get(name)
            if cfg is None:
                queued = self._journal.add({"v": self._version, "op": "del", "name": name})
            else:
                queued = self._journal.add({"v": self._version, "op": "put", "name": name, "topic": _entry(cfg)})
            if queued:
                self.submission = self._writer.submit(self.FILE, self._journal)
            return
        try:
            self._write()
        except OSError as exc:
            if not self._dirty:
                log.error("topics: writing %s failed (%s); kept in memory, retrying later", self.FILE, exc)
            self._dirty = True
            return
        if self._dirty:
            log.warning("topics: %s written again", self.FILE)
        self._dirty = False

    def _write(self) -> None:
        self._config.write(self.FILE, self._document())

    def _document(self) -> dict:
        """The table as RocketMQ lays out topics.json (a copy)."""
        return {"topicConfigTable": {t.name: _entry(t) for t in self._topics.values()},
                "dataVersion": self.data_version}


def _entry(t: TopicConfig) -> dict:
    """One topic as RocketMQ's topicConfigTable holds it."""
    return {"topicName": t.name, "readQueueNums": t.read_queues, "writeQueueNums": t.write_queues,
            "perm": t.perm, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False,
            "attributes": dict(t.attributes), "topicId": str(uuid.UUID(bytes=t.topic_id))}
