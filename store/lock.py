"""The data-dir lock: one process at a time writes a store (RocketMQ's store `lock` file, Kafka's
`.lock` in each log dir). It is an flock(2) on `<dir>/lock`, so the kernel drops it when its holder
dies, `kill -9` included: a stale lock never blocks a restart. An exclusive holder writes
"PID what" into the file; it and /proc/locks name the holder when another process is refused.
Read-only tools take it shared: any number of them, but not next to a writer."""
from __future__ import annotations

import fcntl
import os

LOCK_FILE = "lock"


class DataDirLocked(Exception):
    """Another process holds the lock: one line naming the directory and, where known, the holder."""

    def __init__(self, path: str, holder: str | None, holder_what: str | None, wanted_shared: bool) -> None:
        self.path, self.holder = path, holder
        self.holder_what = holder_what  # what the exclusive holder said it is ("gateway"), None if unknown
        who = f"by {holder}" if holder else "by another process"
        how = "read" if wanted_shared else "use"
        super().__init__(f"data dir {path!r} is locked {who}; cannot {how} it while that runs")


class DataDirLock:
    """A held lock; `release()` (or leaving the `with`) gives it up, process exit does too."""

    def __init__(self, path: str, fd: int, shared: bool) -> None:
        self.path, self.shared = path, shared
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if not self.shared:
                os.ftruncate(fd, 0)  # no stale "PID what" for the next reader
        except OSError:
            pass
        os.close(fd)  # closing the last descriptor drops the flock

    def __enter__(self) -> "DataDirLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def acquire(path: str, *, shared: bool = False, what: str = "gateway") -> DataDirLock:
    """Lock the existing directory `path` without waiting: exclusive for a process that writes
    the store, shared for one that only reads it. DataDirLocked when another process conflicts;
    OSError when the lock file cannot be made (the directory is missing, a file, read-only)."""
    fd = _open(os.path.join(path, LOCK_FILE), shared)
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        holder, holder_what = _holder(fd)
        os.close(fd)
        raise DataDirLocked(path, holder, holder_what, shared) from None
    except BaseException:
        os.close(fd)
        raise
    if not shared:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {what}\n".encode(), 0)
        except OSError:
            pass  # the lock holds; only the message for others is lost
    return DataDirLock(path, fd, shared)


def _open(lock_path: str, shared: bool) -> int:
    """A reader needs no write access to an existing lock file (flock works on any descriptor)."""
    if shared:
        try:
            return os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            pass
    return os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _holder(fd: int) -> tuple[str | None, str | None]:
    """('gateway (PID 1234)', 'gateway'): the PIDs /proc/locks gives for this file's flock, with
    what the exclusive holder wrote; the file alone when /proc/locks is unreadable."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    written_pid, _, written_what = text.partition(" ")
    pids = _flock_pids(fd)
    if pids is None:  # no /proc/locks: trust the file
        pids = [written_pid] if written_pid.isdigit() else []
    if not pids:
        return None, None
    if written_pid in pids and written_what:
        return f"{written_what} (PID {written_pid})", written_what
    if len(pids) == 1:
        return f"PID {pids[0]}", None
    return "PIDs " + ", ".join(pids), None


def _flock_pids(fd: int) -> list[str] | None:
    """PIDs holding an flock on fd's file, from /proc/locks ('2: FLOCK ADVISORY WRITE pid maj:min:ino ...')."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    pids = []
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4] not in pids:
            pids.append(fields[4])
    return pids
