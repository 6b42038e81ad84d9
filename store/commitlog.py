"""The CommitLog (RocketMQ's CommitLog over a MappedFileQueue): every entry of every topic in one
sequence of fixed-size files, in the MessageDecoder layout (codec.remoting.message). An entry never spans
two files: where one does not fit, the rest of the file is a blank marker (size + BLANK_MAGIC).

Appending assigns each entry its queue offset and CommitLog offset, writes all entries of one call
with one write, and describes each as a `DispatchRequest` for the dispatchers. It is three steps so
that the store lock is not held while the write may block on a slow disk: `prepare` (under the store
lock), `write` (only the store's writer lock: one writer at a time), `publish` (under the store lock:
the new end becomes visible with the dispatch). `sync` may run on the flusher thread (see Segments).
"""
from __future__ import annotations

import os
import struct
import time

from codec.remoting import message as M
from store.api import AppendResult, EntryTooLarge, MessageTooLarge, RawEntry, StoreConfig, StoreError
from store.dispatch import DispatchRequest
from store.segment_size import check as check_segment_size
from store.segments import Segments

BLANK_MIN = 8  # CommitLog.END_FILE_MIN_BLANK_LENGTH
SIZE_MAGIC = struct.Struct(">iI")
_TS = struct.Struct(">q")
_STORED_SYSFLAG = ~(M.BORNHOST_V6_FLAG | M.STOREHOSTADDRESS_V6_FLAG)  # hosts are stored as IPv4


class PreparedAppend:
    """One append between `prepare` and `publish`: where its bytes go and what it stores."""
    __slots__ = ("start", "end", "parts", "results", "requests")

    def __init__(self, start, end, parts, results, requests) -> None:
        self.start, self.end, self.parts, self.results, self.requests = start, end, parts, results, requests


class CommitLog(Segments):
    def __init__(self, directory: str, config: StoreConfig) -> None:
        # the store records its file size: opened with another one, positions would map to the wrong files
        check_segment_size(os.path.dirname(directory), directory, config.commitlog_file_size)
        super().__init__(directory, config.commitlog_file_size, preallocate=True)
        self.host = (config.store_host[0], int(config.store_host[1]))
        self._host_ip = M._ip4(self.host[0])
        self._max_body = config.max_message_size
        self.last_ts = 0  # store timestamps never go backwards
        self.quarantine = None  # store.quarantine.Quarantine, set by the store: corrupt entries

    # ------------------------------------------------------------------ appending

    def _prepare(self, msg: M.Message) -> tuple:
        """Validate one message; (topic field, properties field, entry size). Raises before any state
        changes (the queue id is checked when its ConsumeQueue is created, the entry size against the
        file size where it does not fit the current file)."""
        if len(msg.body) > self._max_body:
            raise MessageTooLarge(f"body of {len(msg.body)} bytes > max_message_size {self._max_body}")
        n = msg.batch_count
        if n != 1:
            if n < 1:
                raise StoreError("batch_count must be >= 1")
            if msg.tags_codes and len(msg.tags_codes) != n:
                raise StoreError(f"tags_codes has {len(msg.tags_codes)} codes for batch_count {n}")
        try:
            return M.prepare(msg)
        except M.MessageFormatError as exc:
            raise StoreError(str(exc)) from exc

    def append(self, msgs, next_offset) -> tuple[list[AppendResult], list[DispatchRequest]]:
        """Write `msgs` at the end in one write; queue offsets continue from `next_offset((topic,
        queue_id))`. All or nothing: bad input or a failed write leaves the CommitLog as it was."""
        prepared = self.prepare(msgs, next_offset)
        self.write_prepared(prepared)
        return self.publish(prepared)

    def prepare(self, msgs, next_offset) -> "PreparedAppend":
        """The bytes and positions of `msgs` written at the end (nothing is written yet); raises
        StoreError on bad input."""
        fs = self.file_size
        host_ip, host_port, host = self._host_ip, self.host[1], self.host
        prepare, pack_header, blank = self._prepare, M.pack_header, M.BLANK.pack
        start = pos = self.end
        ts = self.last_ts = max(int(time.time() * 1000), self.last_ts)
        parts = []
        results = []
        requests = []
        queue_ends: dict = {}  # (topic, qid) -> next queue offset within this call
        try:
            for msg in msgs:
                topic_f, props_f, size = prepare(msg)
                room = fs - pos % fs
                if size + BLANK_MIN > room:  # does not fit: blank out the rest of this file
                    if size + BLANK_MIN > fs:
                        raise EntryTooLarge(f"entry of {size} bytes does not fit a CommitLog file of {fs}")
                    parts.append(blank(room, M.BLANK_MAGIC) + bytes(room - BLANK_MIN))
                    pos += room
                key = (msg.topic, msg.queue_id)
                q = queue_ends.get(key)
                if q is None:
                    q = next_offset(key)
                n = msg.batch_count
                queue_ends[key] = q + n
                sys_flag = msg.sys_flag & _STORED_SYSFLAG
                if n != 1:
                    sys_flag |= M.INNER_BATCH_FLAG
                parts += (pack_header(msg, size, q, pos, ts, host_ip, host_port), msg.body, topic_f, props_f)
                results.append(AppendResult(pos, q, n, size, ts, pos + size, host))
                requests.append(DispatchRequest(msg.topic, msg.queue_id, q, n, pos, size, ts, sys_flag,
                                                msg.tags_codes, msg.keys, msg.properties))
                pos += size
        except (struct.error, TypeError, ValueError, AttributeError) as exc:  # nothing written yet
            raise StoreError(f"cannot store message: {exc}") from exc
        return PreparedAppend(start, pos, parts, results, requests)

    def write_prepared(self, p: "PreparedAppend") -> None:
        """Write a prepared append's bytes; `end` does not move (readers do not see them yet)."""
        try:
            self.write_parts(p.start, p.parts, advance_end=False)
        except OSError as exc:  # nothing was published: the next append overwrites
            raise StoreError(f"CommitLog write failed: {exc}") from exc

    def publish(self, p: "PreparedAppend") -> tuple[list[AppendResult], list[DispatchRequest]]:
        """Make a written append visible (call under the store lock, then dispatch its requests)."""
        if p.end > self.end:
            self.end = p.end
        return p.results, p.requests

    # ------------------------------------------------------------------ reading by offset

    def read_entry(self, phys: int, size: int) -> bytes:
        if phys < self.begin or phys + size > self.end:
            return b""
        try:
            return self.read(phys, size)
        except OSError:
            return b""

    def open_entry_range(self, phys: int, size: int) -> tuple[int, int] | None:
        if phys < self.begin or phys + size > self.end:
            return None
        return self.open_range(phys, size)

    def get(self, phys: int) -> M.StoredMessage | None:
        """Decode the entry at `phys` (its size read from its header), None if there is none."""
        if phys < self.begin or phys + M.FIXED_SIZE > self.end:
            return None
        try:
            buf = self.read(phys, 4096)
            if len(buf) < 8:
                return None
            size, magic = SIZE_MAGIC.unpack_from(buf)
            if magic != M.MAGIC_V1 or size < M.FIXED_SIZE or phys + size > self.end:
                return None
            if size > len(buf):
                buf = self.read(phys, size)
            return self._checked(phys, buf[:size] if len(buf) > size else buf)
        except OSError:
            return None

    def decode_at(self, phys: int, size: int) -> M.StoredMessage | None:
        """Decode an entry whose size a ConsumeQueue unit gave (one pread); None if it is not there
        or is corrupt (quarantined)."""
        return self._checked(phys, self.read_entry(phys, size), size)

    def runs(self, raw: bool) -> "RunReader":
        return RunReader(self, raw)

    def read_run(self, phys: int, n: int) -> bytes:
        """The bytes of consecutive entries from `phys` (one read), cut at the readable end."""
        n = min(n, self.end - phys)
        if phys < self.begin or n <= 0:
            return b""
        try:
            return self.read(phys, n)
        except OSError:
            return b""

    def entry(self, phys: int, buf: bytes, size: int, raw: bool) -> M.StoredMessage | RawEntry | None:
        """The entry whose `size` bytes at `phys` are `buf` (`_checked`'s checks); with `raw`, a plain one
        (M.plain_header) with an intact body comes back undecoded, as a RawEntry."""
        if raw and len(buf) == size:
            h = M.plain_header(buf)
            if h is not None and h[6] == phys and M.body_crc(buf[M.BODY_AT:M.BODY_AT + h[16]]) == h[2]:
                if self.quarantine is not None and phys in self.quarantine:
                    return None
                at = M.BODY_AT + h[16] + 1
                return RawEntry(buf, h[7], str(buf[at:at + buf[at - 1]], "ascii"), h[3], h[5])
        return self._checked(phys, buf, size)

    def _checked(self, phys: int, buf, size: int | None = None) -> M.StoredMessage | None:
        """The decoded entry, its body CRC verified (zlib's crc32: ~0.15 ms per MiB, measured, a few
        per cent of a read); a corrupt entry is quarantined and None returned."""
        q = self.quarantine
        if q is not None and phys in q:
            return None
        try:
            msg = M.decode(buf)
        except M.MessageFormatError as exc:
            if q is not None and size is not None and len(buf) == size:
                q.add(phys, str(exc))
            return None
        if msg.physical_offset != phys or M.body_crc(msg.body) != msg.body_crc:
            if q is not None:
                q.add(phys, "body CRC mismatch" if msg.physical_offset == phys
                      else f"entry says it is at {msg.physical_offset}")
            return None
        return msg

    def store_timestamp_at(self, phys: int) -> int | None:
        raw = self.read(phys + M.STORE_TS_AT, 8)
        return _TS.unpack(raw)[0] if len(raw) == 8 else None


RUN_GAP = 8 << 10  # other queues' entries between two of one queue's that one read may span


def run_bytes(units: list, i: int, budget: int, count: int) -> int:
    """Bytes from units[i]'s entry to the end of the last of the following ones (at most `count`)
    that one read covers: each starts at most RUN_GAP after the previous one ends, their own bytes
    stay within `budget` (at least the first entry) and the span within twice `budget` (gaps)."""
    phys, end = units[i][0], units[i][0] + units[i][1]
    own = units[i][1]
    for k in range(i + 1, min(len(units), i + count)):
        p, size = units[k][0], units[k][1]
        if p < end or p - end > RUN_GAP or own + size > budget or p + size - phys > 2 * budget:
            break
        own += size
        end = p + size
    return end - phys


class RunReader:
    """The entries of one Store.read, those near each other in the CommitLog read with one pread
    (per-entry preads were a third of a pull's cost); `raw` as CommitLog.entry's."""
    __slots__ = ("log", "raw", "run", "run_at")

    def __init__(self, log: CommitLog, raw: bool) -> None:
        self.log, self.raw, self.run, self.run_at = log, raw, b"", 0

    def entry(self, units: list, i: int, budget: int, count: int) -> M.StoredMessage | RawEntry | None:
        """The entry of ConsumeQueue unit units[i]; a new run is read (run_bytes) when it is not in the last."""
        phys, size = units[i][0], units[i][1]
        at = phys - self.run_at
        if at < 0 or at + size > len(self.run):
            self.run_at, at = phys, 0
            self.run = self.log.read_run(phys, run_bytes(units, i, budget, count))
        run = self.run
        if at + size > len(run):  # cut short: as one entry alone (what decode_at makes of it)
            return self.log.decode_at(phys, size)
        return self.log.entry(phys, run if len(run) == size else run[at:at + size], size, self.raw)
