"""Corrupt CommitLog entries below the checkpoint (a flipped bit the disk did not report): found by
the body CRC check when an entry is decoded, or by `verify` (the `--verify` start mode walks the
whole CommitLog), they are quarantined: served to no client (readers skip them, consumers go on
after them), logged once, kept in `config/quarantine.json` across restarts and counted.

RocketMQ checks the body CRC only in recovery (checkCRCOnRecover) and serves what is below the
checkpoint as is; Kafka checks batch CRCs in log recovery after an unclean shutdown and leaves the
rest to the consumer (check.crcs). docs/robustness.md compares.
"""
from __future__ import annotations

import logging

from codec.remoting import message as M

log = logging.getLogger("rocketgate.store")

FILE = "quarantine.json"


class Quarantine:
    """CommitLog offsets of corrupt entries, with why; `add` persists through `config` (a ConfigDir)."""

    def __init__(self, config) -> None:
        self._config = config
        doc = config.read(FILE, {}) or {}
        self.entries: dict[int, str] = {int(k): str(v) for k, v in (doc.get("entries") or {}).items()}

    def __contains__(self, phys: int) -> bool:
        return phys in self.entries

    def add(self, phys: int, why: str) -> None:
        if phys in self.entries:
            return
        self.entries[phys] = why
        log.error("store: quarantined the entry at CommitLog offset %d (%s): served to no client", phys, why)
        try:
            self._config.write(FILE, {"entries": {str(k): v for k, v in sorted(self.entries.items())}})
        except OSError as exc:  # kept in memory; found again by the next check after a restart
            log.warning("store: cannot write %s (%s)", FILE, exc)

    def forget_below(self, phys: int) -> None:
        """Retention removed the files below `phys`."""
        for k in [k for k in self.entries if k < phys]:
            del self.entries[k]


def entry_problem(buf, phys: int) -> str | None:
    """Why the raw entry `buf` read at `phys` is corrupt (body CRC, its own offset), None if sound."""
    try:
        msg = M.decode(buf)
    except M.MessageFormatError as exc:
        return str(exc)
    if msg.physical_offset != phys:
        return f"entry says it is at {msg.physical_offset}"
    if M.body_crc(msg.body) != msg.body_crc:
        return "body CRC mismatch"
    return None


def verify(commitlog, quarantine, upto: int) -> int:
    """Walk every entry of the CommitLog below `upto` and quarantine the corrupt ones (a corrupt size
    field cannot be stepped over: the rest of that file is reported as one damaged range); returns
    the number of entries checked."""
    from store.commitlog import BLANK_MIN, SIZE_MAGIC

    fs = commitlog.file_size
    pos = commitlog.begin
    checked = 0
    while pos < upto:
        fstart = pos - pos % fs
        head = commitlog.read(pos, BLANK_MIN)
        if len(head) < BLANK_MIN:
            break
        size, magic = SIZE_MAGIC.unpack(head)
        if magic == M.BLANK_MAGIC and size == fstart + fs - pos:
            pos = fstart + fs
            continue
        if magic != M.MAGIC_V1 or size < M.FIXED_SIZE or pos + size > fstart + fs:
            quarantine.add(pos, f"unreadable entry header (size {size}, magic 0x{magic & 0xFFFFFFFF:08x}); "
                                f"rest of the file unreadable")
            pos = fstart + fs
            continue
        problem = entry_problem(commitlog.read(pos, size), pos)
        if problem is not None:
            quarantine.add(pos, problem)
        checked += 1
        pos += size
    return checked
