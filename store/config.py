"""Config files under `<store>/config/`, each written atomically (temp file, fsync, rename, fsync dir),
the batched off-loop writer of the ones that change often (offsets, delay and transaction progress),
and the topic table kept in `config/topics.json` (RocketMQ's topicConfigTable layout)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field

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
                view = view[os.write(fd, view):]
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
        atomic_write(self.path(name), json.dumps(obj, ensure_ascii=False, indent=1).encode())

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


class ConfigWriter:
    """Config documents handed over by the event loop (`submit`, cheap) and written by a worker
    thread (`write_pending`; the gateway's writer service runs it). Submissions of one name
    coalesce: only the newest document of each name is written. Submissions are numbered;
    `is_written(name, n)` tells whether submission `n` of `name` (or a newer one) is on disk. A
    failed write (EMFILE, ENOSPC, ...) keeps its document pending for the next try, unless a
    newer one of that name came in meanwhile."""

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


class TopicTable:
    """Topic configs, persisted on every change to config/topics.json: written in place, or, once
    `use_writer` hands them to the gateway's off-loop ConfigWriter, submitted there (`submission`
    numbers the newest one, for callers that answer only once it is on disk)."""

    FILE = "topics.json"

    def __init__(self, config: ConfigDir, on_delete=None) -> None:
        self._config = config
        self._on_delete = on_delete
        self._writer = None  # has `submit(name, document) -> number` (the gateway's writer service)
        self.submission = 0  # the writer's number of the newest submitted table (0: none)
        self.on_create = None  # called with each new TopicConfig (a cluster member publishes it)
        self.on_deleted = None  # called with each deleted topic's name (likewise)
        self._topics: dict[str, TopicConfig] = {}
        self._version = 0
        self._dirty = False  # the last write failed
        doc = config.read(self.FILE, {}) or {}
        for name, t in (doc.get("topicConfigTable") or {}).items():
            self._topics[name] = TopicConfig(
                name=name, read_queues=int(t.get("readQueueNums", 8)), write_queues=int(t.get("writeQueueNums", 8)),
                perm=int(t.get("perm", 6)), attributes=dict(t.get("attributes") or {}))
        self._version = int((doc.get("dataVersion") or {}).get("counter", 0))

    def get(self, name: str) -> TopicConfig | None:
        return self._topics.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._topics

    def names(self) -> list[str]:
        return list(self._topics)

    def create(self, name: str, read_queues: int = 8, write_queues: int = 8, perm: int = 6,
               attributes: dict | None = None) -> TopicConfig:
        cfg = TopicConfig(name, read_queues, write_queues, perm, dict(attributes or {}))
        self._topics[name] = cfg
        self._persist()
        if self.on_create is not None:
            self.on_create(cfg)
        return cfg

    def update(self, cfg: TopicConfig) -> None:
        self._topics[cfg.name] = cfg
        self._persist()

    def delete(self, name: str) -> None:
        if self._topics.pop(name, None) is not None:
            self._persist()
        if self._on_delete is not None:
            self._on_delete(name)
        if self.on_deleted is not None:
            self.on_deleted(name)

    @property
    def data_version(self) -> dict:
        return {"counter": self._version, "timestamp": int(time.time() * 1000)}

    def use_writer(self, writer) -> None:
        """From now on, changes are submitted to `writer.submit(name, document)`, which returns the
        submission's number and has a worker thread write it."""
        self._writer = writer

    def persist_if_dirty(self) -> None:
        """Write the table again if the last write failed (retention calls this every minute)."""
        if self._dirty:
            self._persist()

    def _persist(self) -> None:
        """Write the table; a failure (ENOSPC, EMFILE, ...) keeps the change in memory, is logged and
        tried again with the next change or `persist_if_dirty` (the old file stays whole)."""
        self._version += 1
        if self._writer is not None:
            self.submission = self._writer.submit(self.FILE, self._document())
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
        """The table as RocketMQ lays out topics.json (a copy: a worker thread may serialise it)."""
        return {
            "topicConfigTable": {
                t.name: {"topicName": t.name, "readQueueNums": t.read_queues, "writeQueueNums": t.write_queues,
                         "perm": t.perm, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False,
                         "attributes": dict(t.attributes)}
                for t in self._topics.values()},
            "dataVersion": self.data_version,
        }
