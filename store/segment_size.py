"""The CommitLog file size a store was created with, kept in `config/store.json`: positions map to
files by it, so a store opened with another size is served partly and written into files of the
wrong size (acknowledged records lost at the next restart with the right one). A mismatch is refused.

Stores made before the file existed get it from their files: they start at consecutive multiples
of the size (retention deletes from the front), and none is longer than it."""
from __future__ import annotations

import os

from store.config import atomic_write, read_json

FILE = "store.json"


class SegmentSizeMismatch(ValueError):
    """The store's CommitLog files have another size than the one asked for."""

    def __init__(self, stored: int, configured: int) -> None:
        self.stored, self.configured = stored, configured
        super().__init__(f"its CommitLog files are {stored} bytes ({_human(stored)}) but --commitlog-file-size "
                         f"is {configured} ({_human(configured)}): start it with --commitlog-file-size "
                         f"{_human(stored)}")


def _human(size: int) -> str:
    for unit, shift in (("g", 30), ("m", 20), ("k", 10)):
        if size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def stored(store_path: str) -> int | None:
    """The size recorded in the store, None when it has no record (a new or an older store)."""
    doc = read_json(os.path.join(store_path, "config", FILE))
    size = doc.get("commitlog_file_size") if isinstance(doc, dict) else None
    return size if isinstance(size, int) and size > 0 else None


def from_files(commitlog_dir: str) -> int | None:
    """The file size the existing CommitLog files show, None when they show none (no file, or one
    file that any size at least its length and dividing its start would fit: `fits`)."""
    try:
        names = sorted(n for n in os.listdir(commitlog_dir) if len(n) == 20 and n.isdigit())
    except FileNotFoundError:
        return None
    if len(names) < 2:
        return None
    return int(names[1]) - int(names[0])


def fits(commitlog_dir: str, size: int) -> bool:
    """Could the files in the directory have been written with `size`?"""
    names = sorted(n for n in os.listdir(commitlog_dir) if len(n) == 20 and n.isdigit())
    return all(int(name) % size == 0 and os.path.getsize(os.path.join(commitlog_dir, name)) <= size
               for name in names)


def check(store_path: str, commitlog_dir: str, configured: int) -> None:
    """Refuse a CommitLog file size other than the store's (SegmentSizeMismatch); record it when
    the store has no record yet (a new store, or one older than the record)."""
    recorded = stored(store_path)
    if recorded is not None:
        if recorded != configured:
            raise SegmentSizeMismatch(recorded, configured)
        return
    os.makedirs(commitlog_dir, exist_ok=True)
    shown = from_files(commitlog_dir)
    if shown is not None and shown != configured:
        raise SegmentSizeMismatch(shown, configured)
    if not fits(commitlog_dir, configured):
        raise ValueError(f"its CommitLog files do not fit --commitlog-file-size {configured} "
                         f"({_human(configured)}): start it with the size it was written with")
    os.makedirs(os.path.join(store_path, "config"), exist_ok=True)
    atomic_write(os.path.join(store_path, "config", FILE), b'{"commitlog_file_size": %d}\n' % configured)
