"""The Kafka coordinator's transactional-id table (transactional id -> producer id, epoch, timeout, ...)
as a snapshot plus an append-only journal, so one change (an EndTxn v5's epoch bump, an
InitProducerId) costs one short append and at most one fdatasync, where rewriting the whole table
cost a write of every id and two fsyncs (file and directory).

- `put(txn_id, record)` (event loop) appends one CRC-framed line (store.topic_journal's framing:
  `{"v": version, "id": ..., "rec": {...}}`) to `config/kafkaTransactionalIds.journal` at once: in
  the page cache it survives a kill -9 of the process. `write()` (the config writer's thread: a
  SelfWriting submission) fdatasyncs it; with sync flush the answer waits for that one fdatasync,
  with async flush nobody waits (as for the CommitLog). A failed append stays queued for `write()`.
- Compaction, in `write()` once the journal holds more than max(COMPACT_RECORDS, 2 × ids) records:
  the journal is renamed `<journal>.old` and a new one opened (under the append lock: quick), the
  snapshot `kafkaTransactionalIds.json` (`{"version": n, "transactionalIds": {...}}`) written
  atomically, then the old journal deleted. A snapshot that failed leaves `.old` for the next try.
- Recovery: the snapshot, then the records of `.old` and of the journal newer than it, each file up
  to its first torn or corrupt line (cut, kept in `<file>.corrupt`, logged); all folded into a new
  snapshot. The table written before the journal (a flat `{id: record}` document) reads as version 0.

Imports nothing of ours but store.config (atomic writes) and store.topic_journal (the line framing)."""
from __future__ import annotations

import json
import logging
import os
import threading

from store.config import atomic_write, read_json
from store.topic_journal import _fsync_dir, decode_records, encode_record

log = logging.getLogger("rocketgate.store")

SNAPSHOT = "kafkaTransactionalIds.json"
JOURNAL = "kafkaTransactionalIds.journal"
COMPACT_RECORDS = 10_000  # a compaction is due after this many records, or twice the ids, whichever is more


def _is_record(record) -> bool:
    return (isinstance(record, dict) and isinstance(record.get("v"), int) and isinstance(record.get("id"), str)
            and isinstance(record.get("rec"), dict))


def _snapshot_table(doc) -> tuple[dict, int]:
    """(table, version) of a snapshot document; the flat table of older gateways is version 0."""
    if not isinstance(doc, dict):
        return {}, 0
    if isinstance(doc.get("version"), int) and isinstance(doc.get("transactionalIds"), dict):
        return dict(doc["transactionalIds"]), doc["version"]
    return {k: v for k, v in doc.items() if isinstance(v, dict)}, 0


class TxnIdJournal:
    """The table (`table`: id -> record, read-only for callers) and its journal (module doc)."""

    def __init__(self, config_dir: str) -> None:
        os.makedirs(config_dir, exist_ok=True)
        self._dir = config_dir
        self._snapshot = os.path.join(config_dir, SNAPSHOT)
        self._path = os.path.join(config_dir, JOURNAL)
        self._old = self._path + ".old"
        self._lock = threading.Lock()  # the appends (event loop) and a rotation (writer thread)
        self._sync_lock = threading.Lock()  # one write() at a time
        self.table, self._version = self._recover()
        self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._size = os.fstat(self._fd).st_size
        self._records = 0  # in the journal
        self._queued: list[bytes] = []  # lines whose append failed, in order
        self._old_fd: int | None = None  # a rotated journal waiting for its snapshot
        self._dir_stale = False
        _fsync_dir(config_dir)  # the journal's name is durable before any record is

    def put(self, txn_id: str, record: dict) -> bool:
        """Journal the new record of `txn_id`; True when the append failed (queued for `write()`)."""
        with self._lock:
            self._version += 1
            self.table[txn_id] = record
            self._queued.append(encode_record({"v": self._version, "id": txn_id, "rec": record}))
            self._records += 1
            try:
                self._append_queued()
            except OSError as exc:
                log.error("transactional ids: appending to %s failed (%s); the config writer retries", self._path, exc)
                return True
            return False

    def write(self) -> None:
        """Append what is queued and fdatasync the journal; compact when due (config writer's thread)."""
        with self._sync_lock:
            with self._lock:
                self._append_queued()
                fd, dir_stale, self._dir_stale = self._fd, self._dir_stale, False
            try:
                os.fdatasync(fd)
                if dir_stale:
                    _fsync_dir(self._dir)
            except BaseException:
                self._dir_stale = self._dir_stale or dir_stale
                raise
            if self._old_fd is not None or self._records > max(COMPACT_RECORDS, 2 * len(self.table)):
                self._compact()

    def close(self) -> None:
        with self._sync_lock, self._lock:
            for fd in (self._fd, self._old_fd):
                if fd is not None:
                    os.close(fd)
            self._old_fd = None

    def _append_queued(self) -> None:
        """One write of every queued line (with _lock held); raises OSError with them kept."""
        if not self._queued:
            return
        if os.fstat(self._fd).st_size != self._size:  # a failed append left part of a line
            os.ftruncate(self._fd, self._size)
        view = memoryview(b"".join(self._queued))
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self._size += n
        self._queued = []

    def _compact(self) -> None:
        """Rotate (unless a rotated journal still waits), write the snapshot, drop the old journal."""
        with self._lock:
            if self._old_fd is None:
                os.rename(self._path, self._old)
                fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
                self._old_fd, self._fd, self._size, self._records = self._fd, fd, 0, 0
                self._dir_stale = True
            table, version = dict(self.table), self._version
        try:
            atomic_write(self._snapshot, json.dumps({"version": version, "transactionalIds": table}).encode())
        except OSError as exc:
            log.error("transactional ids: snapshot %s failed (%s); the journals keep every change", self._snapshot, exc)
            return
        os.close(self._old_fd)
        self._old_fd = None
        try:
            os.unlink(self._old)
        except OSError as exc:  # recovery skips its records (all in the snapshot)
            log.warning("transactional ids: deleting %s failed: %s", self._old, exc)

    def _recover(self) -> tuple[dict, int]:
        try:
            table, version, folded = read_table(self._dir, cut=True)
        except ValueError as exc:  # the snapshot is not JSON: kept aside for a look, the journals replayed
            log.error("transactional ids: %s is not JSON (%s): moved to %s.corrupt",
                      self._snapshot, exc, self._snapshot)
            os.replace(self._snapshot, self._snapshot + ".corrupt")
            table, version, folded = read_table(self._dir, cut=True)
        if folded:
            atomic_write(self._snapshot, json.dumps({"version": version, "transactionalIds": table}).encode())
            with open(self._path, "wb") as f:  # emptied: the snapshot holds it all
                os.fsync(f.fileno())
            if os.path.exists(self._old):
                os.unlink(self._old)
        return table, version


def read_table(config_dir: str, cut: bool = False) -> tuple[dict, int, bool]:
    """(table, version, whether a journal held records) as a restart finds them; with `cut`, a torn
    or corrupt tail is logged and copied to `<journal>.corrupt`. ValueError: the snapshot is not JSON."""
    table, version = _snapshot_table(read_json(os.path.join(config_dir, SNAPSHOT)))
    folded = False
    journal = os.path.join(config_dir, JOURNAL)
    for path in (journal + ".old", journal):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        folded = folded or bool(data)
        records, good = decode_records(data, _is_record)
        if good < len(data) and cut:
            log.error("transactional ids: %s has %d bad byte(s) after %d record(s) (torn or corrupt): cut, kept "
                      "in %s.corrupt", path, len(data) - good, len(records), path)
            with open(path + ".corrupt", "wb") as f:
                f.write(data[good:])
        for record in records:
            if record["v"] > version:  # older ones are in the snapshot already
                table[record["id"]], version = record["rec"], record["v"]
    return table, version, folded
