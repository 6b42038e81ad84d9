"""`rocketgate store rebuild`: the ConsumeQueues and IndexFiles again from the CommitLog, offline
(what recovery does when they are lost, on demand). The old directories are moved aside first and
removed once the store has replayed the CommitLog into new ones and written their checkpoints.

The replay validates the whole CommitLog and, as recovery does, cuts it at the first entry that
fails: harmless for a torn tail, but a corrupt entry in the middle (one the gateway quarantined)
would lose every entry after it. So the CommitLog is walked first, and damage anywhere but a torn
tail refuses the rebuild (`RebuildRefused`) unless `allow_cut`."""
from __future__ import annotations

import os
import shutil
import time

from store.api import StoreConfig
from store.dispatch import Dispatcher
from store.store import Store
from store.tool.files import CommitLogFiles, Progress, consume_queues

DERIVED = ("consumequeue", "index")


class RebuildRefused(Exception):
    """The CommitLog has damage before its tail: a rebuild would cut it there."""


def _damage(cl: CommitLogFiles, progress) -> list[tuple[int, str]]:
    """(position, why) of the CommitLog's damage; a torn tail of the last file last."""
    return [(phys, why) for phys, kind, why in cl.walk(progress=progress) if kind == "damage"]


class _Counter(Dispatcher):
    """Counts what the replay feeds and reports progress by CommitLog position."""

    def __init__(self, begin: int, progress) -> None:
        self.begin, self.progress, self.entries = begin, progress, 0

    def dispatch(self, requests) -> None:
        self.entries += len(requests)
        self.progress(requests[-1].physical_offset - self.begin, "rebuild")


def _units_per_file(data_dir: str) -> int:
    for cq in consume_queues(data_dir).values():
        if len(cq.files) > 1:
            return (cq.files[1][0] - cq.files[0][0]) // 20
    return StoreConfig.cq_units_per_file


def rebuild(data_dir: str, progress_out=None, commitlog_file_size: int | None = None,
            index_slots: int = StoreConfig.index_slots, index_entries: int = StoreConfig.index_entries,
            allow_cut: bool = False) -> dict:
    if not os.path.isdir(os.path.join(data_dir, "commitlog")):
        raise FileNotFoundError(f"{data_dir} has no commitlog/")
    began = time.monotonic()
    cl = CommitLogFiles(data_dir, commitlog_file_size or 1 << 30)
    damage = _damage(cl, Progress(cl.total, progress_out))
    last_file = cl.files[-1][0] if cl.files else 0
    inner = [(p, why) for p, why in damage if not (why.startswith("torn tail") and p >= last_file)]
    if inner and not allow_cut:
        where = ", ".join(f"{p} ({why})" for p, why in inner[:3])
        raise RebuildRefused(f"the CommitLog is damaged at {where}; a rebuild would cut it at "
                             f"{inner[0][0]}, losing every entry after it (--allow-cut to accept)")
    config = StoreConfig(commitlog_file_size=commitlog_file_size or cl.file_size,
                         cq_units_per_file=_units_per_file(data_dir),
                         index_slots=index_slots, index_entries=index_entries)
    stamp = time.strftime("%Y%m%d%H%M%S")
    aside = []
    for name in DERIVED:
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            os.replace(path, f"{path}.rebuild-old-{stamp}")
            aside.append((path, f"{path}.rebuild-old-{stamp}"))
    try:
        store = Store(data_dir, config)
        counter = _Counter(cl.begin, Progress(cl.total, progress_out))
        store.add_dispatcher(counter)
        store.recover()
        queues = len(store.consume_queues.queues)
        index_files = len(store.index.files)
        store.close()
    except BaseException:
        for path, old in aside:  # put the old ones back: nothing is lost by a failed rebuild
            shutil.rmtree(path, ignore_errors=True)
            os.replace(old, path)
        raise
    for _path, old in aside:
        shutil.rmtree(old, ignore_errors=True)
    seconds = time.monotonic() - began
    return {"data_dir": data_dir, "ok": True, "entries": counter.entries, "consume_queues": queues,
            "cut_at": damage[0][0] if damage else None,
            "index_files": index_files, "commitlog_bytes": cl.total, "seconds": round(seconds, 3),
            "mb_per_s": round(cl.total / 1e6 / max(seconds, 1e-9), 1)}
