"""Taking the data dir at start, before anything in it is opened: it must be a directory this
process can write, and no other process may be using it (store.lock: a second gateway on one
store would hand out the same offsets and lose acknowledged records). Problems are one line."""
from __future__ import annotations

import errno
import os

from store.lock import DataDirLock, DataDirLocked, acquire


class DataDirError(Exception):
    """The data dir cannot be used; the message is the one line to print."""


def take(path: str, what: str = "gateway") -> DataDirLock:
    """Create `path` if needed, lock it exclusively for this process and check it is writable."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise DataDirError(f"data dir {path!r} is a file, not a directory (--data-dir)")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            raise DataDirError(f"data dir {path!r} cannot be created: a part of the path is a file, "
                               f"not a directory (--data-dir)") from None
        raise DataDirError(f"data dir {path!r} is not writable: {exc.strerror or exc}") from None
    try:
        lock = acquire(path, what=what)
    except DataDirLocked as exc:
        raise DataDirError(str(exc)) from None
    except OSError as exc:
        raise DataDirError(f"data dir {path!r} is not writable: {exc.strerror or exc}") from None
    try:
        probe = os.path.join(path, ".write-test")
        with open(probe, "wb") as f:
            f.write(b"x")
        os.unlink(probe)
    except OSError as exc:
        lock.release()
        raise DataDirError(f"data dir {path!r} is not writable: {exc.strerror or exc}") from None
    return lock
