"""A test-only fault seam (docs/tables.md, "Crash safety"): the environment variable
ROCKETGATE_TABLES_FAULTS makes the gateway kill itself (SIGKILL, as `kill -9`) at one point of a
table commit, so tests can check that a restart resumes from the last committed snapshot with no
record missing and none twice. Unset (always in production), nothing here runs. Rules, comma
separated:

    data-file=N   die in the middle of writing the Parquet data file of the Nth commit
    metadata=N    die in the middle of the Nth catalog commit: its new metadata file is written,
                  the catalog does not point at it yet
    fail=PATH     while PATH exists, every table commit fails (OSError) before writing anything: a
                  catalog or disk that cannot be written
"""
from __future__ import annotations

import logging
import os
import signal

from tables.durable_io import DurableFileIO

ENV = "ROCKETGATE_TABLES_FAULTS"
ENV_SET = bool(os.environ.get(ENV))  # read once: nothing of this module runs in production
log = logging.getLogger("rocketgate.tables")


def rules() -> dict[str, int]:
    out = {}
    for item in filter(None, (os.environ.get(ENV) or "").split(",")):
        name, _, n = item.partition("=")
        if name.strip() != "fail":
            out[name.strip()] = int(n or 1)
    return out


class Counter:
    commits = 0  # data files begun (one per commit of a table topic; the DLQ table's count too)
    metadata = 0


def die(where: str) -> None:
    log.warning("tables: TEST FAULT SEAM: killing the process %s", where)
    os.kill(os.getpid(), signal.SIGKILL)


def check_commit() -> None:
    """Called before each table commit: OSError while the `fail` rule's file exists."""
    path = os.environ.get(ENV) and next((item.partition("=")[2] for item in os.environ[ENV].split(",")
                                         if item.startswith("fail=")), None)
    if path and os.path.exists(path):
        raise OSError(f"test fault: table commits fail while {path} exists")


def metadata_written() -> None:
    """Called after a catalog commit wrote its new metadata file, before the catalog points at it."""
    Counter.metadata += 1
    if rules().get("metadata") == Counter.metadata:
        die("between a metadata file and its catalog commit")


class _DyingStream:
    """An output stream that kills the process after its first write (a torn data file)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def write(self, data) -> int:
        n = self.inner.write(data)
        self.inner.flush()
        die("while writing a data file")
        return n

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.inner.close()


class _DyingFile:
    def __init__(self, inner) -> None:
        self.inner = inner

    def create(self, overwrite: bool = False):
        return _DyingStream(self.inner.create(overwrite))

    def __getattr__(self, name):
        return getattr(self.inner, name)


class FaultFileIO(DurableFileIO):
    """DurableFileIO whose Nth Parquet data file dies while being written (rule data-file=N)."""

    def new_output(self, location: str):
        out = super().new_output(location)
        if location.endswith(".parquet"):
            Counter.commits += 1
            if rules().get("data-file") == Counter.commits:
                return _DyingFile(out)
        return out
