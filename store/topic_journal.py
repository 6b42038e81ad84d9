"""The topic table's write-ahead journal: every change is one appended record in
`config/topics.journal`, fsynced (several queued changes share one fsync), and the whole table is
written to `config/topics.json` (RocketMQ's topicConfigTable layout, which tools read) only now and
then, after which the journal is emptied. Creating a topic thus costs one short append however
many topics there are, where rewriting topics.json on every change grew with the table.

A record is one line: eight hex digits of the CRC-32 of the JSON that follows, a space, the JSON
`{"v": version, "op": "put", "name": ..., "topic": {...}}` (or `"op": "del"` without "topic"), a
newline. Recovery (`recover`) loads topics.json, replays the records whose version is newer than
its dataVersion counter, stops at the first line that is torn or fails its CRC (kept aside in
`topics.journal.corrupt`), folds everything into a new topics.json and empties the journal.

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
# A snapshot is due after this many journalled changes, or after as many as there are topics,
# whichever is more (so its cost per change stays flat as the table grows) ...
SNAPSHOT_CHANGES = 1000
# ... or once the journal holds this many bytes, or as many as the last snapshot, whichever is more.
SNAPSHOT_BYTES = 4 << 20


# Made once: json.dumps with options builds a new encoder on every call.
_RECORD_JSON = json.JSONEncoder(separators=(",", ":")).encode
_ENTRY_JSON = json.JSONEncoder(ensure_ascii=False).encode


def encode_record(record: dict) -> bytes:
    payload = _RECORD_JSON(record).encode()
    return b"%08x %s\n" % (zlib.crc32(payload), payload)


def decode_records(data: bytes) -> tuple[list[dict], int]:
    """The records of a journal's bytes, and the length of the good prefix: reading stops at the
    first line that is torn (no newline), fails its CRC or is not a record."""
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
        if not _is_record(record):
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


def recover(config) -> tuple[dict, int]:
    """The topic table (name -> topics.json entry) and its version, from topics.json and the
    journal; a journal that held anything is folded into a new topics.json and emptied. A torn
    or corrupt tail is cut (kept in topics.journal.corrupt, logged); it never fails the start."""
    doc = config.read(SNAPSHOT, {})
    doc = doc if isinstance(doc, dict) else {}
    table = doc.get("topicConfigTable")
    table = dict(table) if isinstance(table, dict) else {}
    try:
        version = int((doc.get("dataVersion") or {}).get("counter", 0))
    except (TypeError, ValueError, AttributeError):
        version = 0
    path = config.path(JOURNAL)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return table, version
    records, good = decode_records(data)
    if good < len(data):
        log.error("topics: %s has %d bad byte(s) after %d good record(s) (torn or corrupt): cut, kept in %s.corrupt",
                  path, len(data) - good, len(records), path)
        with open(path + ".corrupt", "wb") as f:
            f.write(data[good:])
    for record in records:
        if record["v"] > version:  # older ones are in topics.json already (a crash before the journal was emptied)
            apply_record(table, record)
            version = record["v"]
    if data:
        config.write_bytes(SNAPSHOT, snapshot_bytes(table, version))
        _empty(path)
    return table, version


def _empty(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.ftruncate(fd, 0)
        os.fsync(fd)
    finally:
        os.close(fd)


class TopicJournal:
    """The journal of a running table. `add(record)` (event loop, cheap) queues an encoded record;
    `write()` (the config writer's thread) appends everything queued with one write and one
    fsync, then writes a snapshot when one is due. A failed append (ENOSPC, EMFILE...) raises
    and keeps its records queued, in order, for the next `write()`; the journal is cut back to
    its last whole record first, so a half-written batch never lands between good ones. A failed
    snapshot is only logged: the records are durable in the journal, and it is tried again later."""

    def __init__(self, config, table: dict, version: int) -> None:
        self._config = config
        self._path = config.path(JOURNAL)
        self._table = {name: dict(entry) for name, entry in table.items()}  # the state on disk
        self._version = version
        self._lock = threading.Lock()  # guards _queued (the event loop adds, the writer thread takes)
        self._write_lock = threading.Lock()  # one writer at a time (the thread, or close at shutdown)
        self._queued: list[tuple[dict, bytes]] = []
        self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._size = os.fstat(self._fd).st_size  # the end of the last whole record
        self._changes = 0  # records since the last snapshot
        self._snapshot_size = 0
        self._snapshot_failed = False
        _fsync_dir(os.path.dirname(self._path))  # the journal's name is durable before any record is

    def add(self, record: dict) -> None:
        line = encode_record(record)
        with self._lock:
            self._queued.append((record, line))

    def write(self) -> None:
        with self._write_lock:
            with self._lock:
                batch, self._queued = self._queued, []
            if batch:
                try:
                    self._append(b"".join(line for _, line in batch))
                except BaseException:
                    with self._lock:
                        self._queued[:0] = batch
                    raise
                for record, _ in batch:
                    apply_record(self._table, record)
                    self._version = record["v"]
                self._changes += len(batch)
            if self._snapshot_due():
                self._snapshot()

    def close(self) -> None:
        """Write what is queued, fold the journal into topics.json (a clean stop leaves it current)
        and close the file. Failures are logged: the journal keeps what was appended."""
        try:
            self.write()
            with self._write_lock:
                if self._changes:
                    self._snapshot()
        except OSError as exc:
            log.error("topics: journal at close: %s", exc)
        finally:
            os.close(self._fd)

    def _append(self, data: bytes) -> None:
        if os.fstat(self._fd).st_size != self._size:  # a failed append left part of a batch
            os.ftruncate(self._fd, self._size)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        os.fdatasync(self._fd)
        self._size += len(data)

    def _snapshot_due(self) -> bool:
        return self._changes > 0 and (self._changes >= max(SNAPSHOT_CHANGES, len(self._table))
                                      or self._size >= max(SNAPSHOT_BYTES, self._snapshot_size))

    def _snapshot(self) -> None:
        data = snapshot_bytes(self._table, self._version)
        try:
            self._config.write_bytes(SNAPSHOT, data)
            os.ftruncate(self._fd, 0)
            os.fsync(self._fd)
        except OSError as exc:
            if not self._snapshot_failed:
                log.error("topics: writing %s failed (%s); the journal keeps the changes, retrying later",
                          SNAPSHOT, exc)
            self._snapshot_failed = True
            return
        if self._snapshot_failed:
            log.warning("topics: %s written again", SNAPSHOT)
        self._snapshot_failed = False
        self._size = 0
        self._changes = 0
        self._snapshot_size = len(data)


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory or ".", os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
