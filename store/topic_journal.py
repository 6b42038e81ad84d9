"""The topic table's write-ahead journal: every change is one appended record in
`config/topics.journal`, and the whole table is written to `config/topics.json` (RocketMQ's
topicConfigTable layout, which tools read) only now and then. Creating a topic thus costs one
short append however many topics there are, where rewriting topics.json on every change grew with
the table.

Durability follows the store's flush mode. Sync: records are queued, and the config writer's
thread appends them with one write and one fdatasync (several queued changes share it); the
create is answered after that. Async: the record is appended on the spot (page cache: it
survives a kill -9 of the process), the create is answered at once, and `sync()` (the store's
flusher, every flush interval) fdatasyncs the journal, as the CommitLog in async mode.

A snapshot (every max(SNAPSHOT_CHANGES, topics at the last one) changes) runs on a thread of its own, never
inside a create's answer: it renames the journal to `topics.journal.<version>` and opens a new
one (both quick, under the append lock), writes topics.json with the table up to that version,
then deletes the renamed journals it covers. A crash at any point leaves topics.json plus
journals that together hold every appended change.

A record is one line: eight hex digits of the CRC-32 of the JSON that follows, a space, the JSON
`{"v": version, "op": "put", "name": ..., "topic": {...}}` (or `"op": "del"` without "topic"), a
newline. Recovery (`recover`) loads topics.json, replays the records of the renamed journals
(oldest first) and of topics.journal whose version is newer than what it has, stops reading a
file at its first line that is torn or fails its CRC (kept aside in `<file>.corrupt`), folds
everything into a new topics.json and empties the journal.

Imports nothing of ours: the caller hands in its config directory (`read(name, default)`,
`path(name)`, `write_bytes(name, data)`)."""
from __future__ import annotations

import json
import logging
import os
import threading
import time
import zlib

log = logging.getLogger("rocketgate.store")

SNAPSHOT = "topics.json"
JOURNAL = "topics.journal"
# A snapshot is due after this many journalled changes, or after as many as there were topics at
# the last one, whichever is more (its cost per change stays flat: a table that only grows doubles
# from one snapshot to the next) ...
SNAPSHOT_CHANGES = 1000
# ... or once the journal holds this many bytes, or as many as the last snapshot, whichever is more.
SNAPSHOT_BYTES = 4 << 20
SNAPSHOT_RETRY_S = 1.0  # after a failed snapshot, the next try waits this long


# Made once: json.dumps with options builds a new encoder on every call.
_RECORD_JSON = json.JSONEncoder(separators=(",", ":")).encode
_ENTRY_JSON = json.JSONEncoder(ensure_ascii=False).encode


def encode_record(record: dict) -> bytes:
    payload = _RECORD_JSON(record).encode()
    return b"%08x %s\n" % (zlib.crc32(payload), payload)


def decode_records(data: bytes, is_record=None) -> tuple[list[dict], int]:
    """The records of a journal's bytes, and the length of the good prefix: reading stops at the
    first line that is torn (no newline), fails its CRC or is not a record (`is_record`: a topic
    record by default; store.txn_id_journal has its own)."""
    is_record = is_record or _is_record
    payloads, ends = [], []
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0 or end - pos < 10 or data[pos + 8:pos + 9] != b" ":
            break
        payload = data[pos + 9:end]
        try:
            if int(data[pos:pos + 8], 16) != zlib.crc32(payload):
                break
        except ValueError:
            break
        payloads.append(payload)
        ends.append(end + 1)
        pos = end + 1
    out: list[dict] = []
    for record in _parse_all(payloads):
        if not is_record(record):
            break
        out.append(record)
    return out, ends[len(out) - 1] if out else 0


def _parse_all(payloads: list[bytes]) -> list:
    """The JSON values of `payloads` (None for one that is not JSON): one parse of them all when
    they all are, which is what makes a replay of thousands of records quick."""
    try:
        values = json.loads(b"[" + b",".join(payloads) + b"]")
        if len(values) == len(payloads):  # else a payload held more than one value: parse them one by one
            return values
    except ValueError:
        pass
    out = []
    for payload in payloads:
        try:
            out.append(json.loads(payload))
        except ValueError:
            out.append(None)
    return out


def _is_record(record) -> bool:
    return (isinstance(record, dict) and isinstance(record.get("v"), int) and isinstance(record.get("name"), str)
            and (record.get("op") == "del" or (record.get("op") == "put" and isinstance(record.get("topic"), dict))))


def apply_record(table: dict, record: dict) -> None:
    """Apply one journal record to `table` (topic name -> topics.json entry)."""
    if record["op"] == "put":
        table[record["name"]] = record["topic"]
    else:
        table.pop(record["name"], None)


def snapshot_bytes(table: dict, version: int) -> bytes:
    """topics.json in RocketMQ's layout, one topic per line (the C JSON encoder: fast at 10 000 topics)."""
    entries = ",\n".join(f"  {_ENTRY_JSON(name)}: {_ENTRY_JSON(entry)}" for name, entry in table.items())
    stamp = json.dumps({"counter": version, "timestamp": int(time.time() * 1000)})
    return f'{{\n "topicConfigTable": {{\n{entries}\n }},\n "dataVersion": {stamp}\n}}\n'.encode()


def renamed_journals(path: str) -> list[tuple[int, str]]:
    """(version, path) of the journals a snapshot renamed to `<path>.<version>`, oldest first."""
    directory, base = os.path.split(path)
    found = []
    for name in os.listdir(directory or "."):
        tail = name[len(base) + 1:] if name.startswith(base + ".") else ""
        if tail.isdigit():
            found.append((int(tail), os.path.join(directory, name)))
    return sorted(found)


def snapshot_table(doc) -> tuple[dict, int]:
    """(topic table, data version) of a topics.json document; anything malformed reads as empty."""
    doc = doc if isinstance(doc, dict) else {}
    table = doc.get("topicConfigTable")
    table = dict(table) if isinstance(table, dict) else {}
    try:
        version = int((doc.get("dataVersion") or {}).get("counter", 0))
    except (TypeError, ValueError, AttributeError):
        version = 0
    return table, version


def recover(config) -> tuple[dict, int]:
    """The topic table (name -> topics.json entry) and its version, from topics.json and the
    journals; journals that held anything are folded into a new topics.json, the renamed ones
    deleted and topics.journal emptied. A torn or corrupt tail is cut (kept in `<file>.corrupt`,
    logged); it never fails the start."""
    table, version = snapshot_table(config.read(SNAPSHOT, {}))
    path = config.path(JOURNAL)
    renamed = [p for _, p in renamed_journals(path)]
    folded = bool(renamed)
    for file in renamed + [path]:
        try:
            with open(file, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        folded = folded or bool(data)
        records, good = decode_records(data)
        if good < len(data):
            log.error("topics: %s has %d bad byte(s) after %d good record(s) (torn or corrupt): cut, kept in "
                      "%s.corrupt", file, len(data) - good, len(records), file)
            with open(file + ".corrupt", "wb") as f:
                f.write(data[good:])
        for record in records:
            if record["v"] > version:  # older ones are in topics.json already (a crash before the cleanup)
                apply_record(table, record)
                version = record["v"]
    if folded:
        config.write_bytes(SNAPSHOT, snapshot_bytes(table, version))
        if os.path.exists(path):
            _empty(path)
        for file in renamed:
            os.unlink(file)
        _fsync_dir(os.path.dirname(path))
    return table, version


def _empty(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.ftruncate(fd, 0)
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_journal(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)


class TopicJournal:
    """The journal of a running table. `add(record)` (event loop, cheap) journals one change:
    queued for `write()` (the config writer's thread: append, one fdatasync) in sync mode,
    appended at once in async mode, where `sync()` (the flusher's thread) fdatasyncs later. A
    failed append (ENOSPC, EMFILE...) keeps its records queued, in order, for the next `write()`
    (`add` returns True: the caller hands the journal to the writer); the journal is cut back to
    its last whole record first, so a half-written batch never lands between good ones. Snapshots
    run on their own thread; a failed one is logged and tried again after SNAPSHOT_RETRY_S: the
    records stay in the renamed journals meanwhile."""

    def __init__(self, config, table: dict, version: int, sync: bool = True) -> None:
        self._config = config
        self._path = config.path(JOURNAL)
        self._dir = os.path.dirname(self._path)
        self._sync = sync
        self._table = {name: dict(entry) for name, entry in table.items()}  # the state in the journals
        self._version = version
        # Held for an append or a rotation only (the event loop takes it in async mode): guards
        # _queued, _fd, _size, _table, _version, _changes, _unsynced, _retired, _snapshotter.
        self._lock = threading.Lock()
        # One fdatasync-er at a time; journal files are closed only under it (never while synced).
        self._sync_lock = threading.Lock()
        self._queued: list[tuple[dict, bytes]] = []
        self._fd = _open_journal(self._path)
        self._size = os.fstat(self._fd).st_size  # the end of the last whole record
        self._unsynced: list[int] = []  # files appended to since their last fdatasync
        self._dir_stale = False  # a rotation created a journal whose name is not fsynced yet
        self._retired: list[int] = []  # renamed journals, open until a snapshot covers them
        self._changes = 0  # records since the last rotation
        self._rotated_topics = len(table)  # topics at the last rotation
        self._snapshot_size = 0
        self._snapshotter: threading.Thread | None = None
        self._snapshot_failed = False
        self._retry_at = 0.0
        self._sync_failed = False
        self._closing = False
        _fsync_dir(self._dir)  # the journal's name is durable before any record is

    def add(self, record: dict) -> bool:
        """Journal one change; True if it waits in the queue for `write()` (always in sync mode)."""
        line = encode_record(record)
        with self._lock:
            self._queued.append((record, line))
            if self._sync or len(self._queued) > 1:  # sync mode, or a failed append is waiting
                return True
            try:
                self._append_queued()
            except OSError as exc:
                log.error("topics: appending to %s failed (%s); the config writer retries", self._path, exc)
                return True
        self._snapshot_if_due()
        return False

    def write(self) -> None:
        """Append what is queued; in sync mode fdatasync it before returning (config writer's thread)."""
        with self._sync_lock:
            with self._lock:
                if self._queued:
                    self._append_queued()
            if self._sync:
                self._sync_appended()
        self._snapshot_if_due()

    def sync(self) -> None:
        """fdatasync what was appended since the last call (the store's flusher, async mode); a
        failure is logged once per run of failures and tried again at the next call."""
        if self._sync:  # the writer fsyncs every append before its answer
            return
        try:
            with self._sync_lock:
                self._sync_appended()
        except OSError as exc:
            if not self._sync_failed:
                log.error("topics: fdatasync of %s failed (%s); retrying with the next flush", self._path, exc)
            self._sync_failed = True
            return
        self._sync_failed = False
        self._snapshot_if_due()

    def join_snapshot(self) -> None:
        """Wait for a snapshot in progress to end (close; tests)."""
        thread = self._snapshotter
        if thread is not None:
            thread.join()

    def close(self) -> None:
        """Write what is queued, fold the journals into topics.json (a clean stop leaves it current)
        and close the files. Failures are logged: the journals keep what was appended."""
        with self._lock:
            self._closing = True
        self.join_snapshot()
        try:
            with self._sync_lock:
                with self._lock:
                    if self._queued:
                        self._append_queued()
                    folding = self._size > 0 or self._retired
            if folding:
                self.snapshot()
        except OSError as exc:
            log.error("topics: journal at close: %s", exc)
        finally:
            with self._sync_lock:
                for fd in self._retired + [self._fd]:
                    os.close(fd)
                self._retired, self._unsynced = [], []

    def _append_queued(self) -> None:
        """Append every queued record with one write (called with _lock held); raises, records kept."""
        batch = self._queued
        self._append(b"".join(line for _, line in batch))
        self._queued = []
        for record, _ in batch:
            apply_record(self._table, record)
            self._version = record["v"]
        self._changes += len(batch)
        if self._fd not in self._unsynced:
            self._unsynced.append(self._fd)

    def _append(self, data: bytes) -> None:
        if os.fstat(self._fd).st_size != self._size:  # a failed append left part of a batch
            os.ftruncate(self._fd, self._size)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        self._size += len(data)

    def _sync_appended(self) -> None:
        """fdatasync every journal appended to since the last call (with _sync_lock held)."""
        with self._lock:
            fds, self._unsynced = self._unsynced, []
            dir_stale, self._dir_stale = self._dir_stale, False
        try:
            for fd in fds:
                os.fdatasync(fd)
            if dir_stale:
                _fsync_dir(self._dir)
        except BaseException:
            with self._lock:
                self._unsynced[:0] = [fd for fd in fds if fd not in self._unsynced]
                self._dir_stale = self._dir_stale or dir_stale
            raise

    def _snapshot_if_due(self) -> None:
        with self._lock:
            if self._closing or self._snapshotter is not None or not self._snapshot_due():
                return
            thread = self._snapshotter = threading.Thread(target=self._snapshot_in_background,
                                                          name="topics-snapshot", daemon=True)
        thread.start()

    def _snapshot_due(self) -> bool:
        if time.monotonic() < self._retry_at:  # the last snapshot failed a moment ago
            return False
        if self._retired:  # it failed: its renamed journals wait for the next one
            return True
        return self._changes > 0 and (self._changes >= max(SNAPSHOT_CHANGES, self._rotated_topics)
                                      or self._size >= max(SNAPSHOT_BYTES, self._snapshot_size))

    def _snapshot_in_background(self) -> None:
        try:
            self.snapshot()
        except Exception:  # a bug: logged, the journals keep every change
            log.exception("topics: snapshot failed")
        finally:
            with self._lock:
                self._snapshotter = None

    def snapshot(self) -> None:
        """Rotate the journal, write topics.json up to the rotation, delete the journals it covers.
        Blocking (the snapshot thread, or close); a failure is logged and tried again later."""
        try:
            with self._lock:
                if self._size > 0:
                    self._rotate()
                table, version = dict(self._table), self._version
            data = snapshot_bytes(table, version)
            self._config.write_bytes(SNAPSHOT, data)
        except OSError as exc:
            if not self._snapshot_failed:
                log.error("topics: snapshot to %s failed (%s); the journals keep the changes, retrying later",
                          SNAPSHOT, exc)
            self._snapshot_failed = True
            self._retry_at = time.monotonic() + SNAPSHOT_RETRY_S
            return
        with self._sync_lock:  # topics.json holds every record of the renamed journals: drop them
            with self._lock:
                retired, self._retired = self._retired, []
                self._unsynced = [fd for fd in self._unsynced if fd not in retired]
            for fd in retired:
                os.close(fd)
        try:
            for number, path in renamed_journals(self._path):
                if number <= version:
                    os.unlink(path)
        except OSError as exc:  # recovery skips their records (all in topics.json) and deletes them
            log.warning("topics: deleting a renamed journal failed: %s", exc)
        if self._snapshot_failed:
            log.warning("topics: %s written again", SNAPSHOT)
        self._snapshot_failed = False
        self._snapshot_size = len(data)

    def _rotate(self) -> None:
        """Rename the journal to `<journal>.<version>` and append to a new one (with _lock held)."""
        if os.fstat(self._fd).st_size != self._size:  # a failed append left part of a batch
            os.ftruncate(self._fd, self._size)
        renamed = f"{self._path}.{self._version}"
        os.rename(self._path, renamed)
        try:
            fd = _open_journal(self._path)
        except OSError:
            os.rename(renamed, self._path)
            raise
        self._retired.append(self._fd)
        self._fd, self._size, self._changes = fd, 0, 0
        self._rotated_topics = len(self._table)
        self._dir_stale = True


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory or ".", os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
