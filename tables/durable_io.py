"""pyiceberg's PyArrow FileIO with every local file fsynced when its writer closes it, its directory
too (a new entry), so each data, manifest and metadata file is on disk before the next file that
names it is written and before the catalog (SQLite, synced) points at any of them: a power loss
leaves at most files no snapshot references. pyiceberg itself does not sync. Object-store files need
nothing: an S3 PUT is durable when it returns."""
from __future__ import annotations

import os

from pyiceberg.io.pyarrow import PyArrowFileIO


def fsync_path(path: str) -> None:
    """fsync the file at `path` (fsync reaches the file's pages through any descriptor) and its directory."""
    for target in (path, os.path.dirname(path) or "."):
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class _SyncedStream:
    """An output stream that fsyncs its file once closed."""

    def __init__(self, inner, path: str) -> None:
        self.inner, self.path = inner, path

    def write(self, data) -> int:
        return self.inner.write(data)

    def close(self) -> None:
        if not self.inner.closed:
            self.inner.close()
            fsync_path(self.path)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _SyncedFile:
    def __init__(self, inner, path: str) -> None:
        self.inner, self.path = inner, path

    def create(self, overwrite: bool = False):
        return _SyncedStream(self.inner.create(overwrite), self.path)

    def __len__(self) -> int:
        return len(self.inner)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def local_path(location: str) -> str | None:
    if location.startswith("file://"):
        return location[len("file://"):]
    return location if location.startswith("/") else None


class DurableFileIO(PyArrowFileIO):
    def new_output(self, location: str):
        out = super().new_output(location)
        path = local_path(location)
        return out if path is None else _SyncedFile(out, path)
