"""What the pop engine's tests below the wire share: a clock moved by hand and a small real store."""
from __future__ import annotations

import store


class Clock:
    """Milliseconds that pass only when a test sets `now`."""

    def __init__(self):
        self.now = 1_000_000

    def __call__(self):
        return self.now


def open_store(tmp_path):
    """The store under tmp_path/data (opened again by a restart test): 1 MiB CommitLog files."""
    return store.open(str(tmp_path / "data"), store.StoreConfig(commitlog_file_size=1 << 20, cq_units_per_file=1000))
