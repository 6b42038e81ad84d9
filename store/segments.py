"""A sequence of fixed-size files named by their 20-digit start position (RocketMQ's MappedFileQueue).

Plain pread/pwrite rather than mmap: appending through the page cache with os.pwrite costs no page
faults, and the process's private memory does not grow with the store (machine-limits.md, 1d).
"""
from __future__ import annotations

import bisect
import errno
import os

import store.faults as faults


_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
_VECTOR_MIN = 4096  # average part size from which pwritev beats joining
RESERVE_AHEAD = 4 << 20  # blocks reserved ahead of the write position (preallocate)


def file_name(start: int) -> str:
    return f"{start:020d}"


class Segments:
    """Files `dir/<20-digit start>` of `file_size` bytes each; positions are absolute.

    Not thread-safe by itself: the store serializes writers; `sync` may run on another thread."""

    def __init__(self, directory: str, file_size: int, preallocate: bool = False) -> None:
        self.dir = directory
        self.file_size = file_size
        self.preallocate = preallocate  # reserve blocks ahead of the writes (the CommitLog)
        self._reserved: dict[int, int] = {}  # file start -> in-file position reserved up to
        self.starts: list[int] = []  # sorted
        self.fds: dict[int, int] = {}
        self.end = 0  # one past the last byte written
        self.synced = 0  # everything before this is on disk
        os.makedirs(directory, exist_ok=True)
        for name in sorted(os.listdir(directory)):
            if len(name) == 20 and name.isdigit():
                self._open(int(name), new=False)
        if self.starts:
            last = self.starts[-1]
            self.end = last + os.fstat(self.fds[last]).st_size
            self.synced = self.end

    def _open(self, start: int, new: bool = True) -> int:
        path = os.path.join(self.dir, file_name(start))
        fd = faults.open_file(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        bisect.insort(self.starts, start)
        self.fds[start] = fd
        return fd

    def _reserve(self, start: int, fd: int, upto: int) -> None:
        """With `preallocate`, make sure the file at `start` has real blocks up to `upto` (in-file
        position), reserving RESERVE_AHEAD more at a time: a full disk is an OSError(ENOSPC) here,
        before anything is written, and the writes themselves never run out of space."""
        if self.preallocate and upto > self._reserved.get(start, 0):
            done = self._reserved.get(start, 0)
            target = min(self.file_size, upto + RESERVE_AHEAD)
            faults.allocate(fd, done, target - done)
            self._reserved[start] = target

    @property
    def begin(self) -> int:
        """Start of the first file (the lowest position that may still hold data)."""
        return self.starts[0] if self.starts else self.end

    def file_start(self, pos: int) -> int:
        return pos - pos % self.file_size

    def write(self, pos: int, data, advance_end: bool = True) -> None:
        """Write `data` at `pos` (appends, or rewrites after a truncate), creating files as needed.
        With `advance_end=False` the caller moves `end` itself (once the write may be seen)."""
        mv = memoryview(data)
        while len(mv):
            start = self.file_start(pos)
            fd = self.fds.get(start)
            if fd is None:
                fd = self._open(start)
            n = min(len(mv), start + self.file_size - pos)
            self._reserve(start, fd, pos - start + n)
            n = faults.pwrite(fd, mv[:n], pos - start)  # short (a disk filling up): the rest goes next
            if not n:
                raise OSError(errno.EIO, "pwrite wrote nothing")
            pos += n
            mv = mv[n:]
        if advance_end and pos > self.end:
            self.end = pos

    def write_parts(self, pos: int, parts: list, advance_end: bool = True) -> None:
        """Write the concatenation of `parts` at `pos`. Large parts (Kafka batches stored whole) go by
        one pwritev, saving a copy; many small ones are cheaper joined (fewer iovecs for the kernel)."""
        total = sum(map(len, parts))
        start = self.file_start(pos)
        if 1 < len(parts) <= _IOV_MAX and total >= _VECTOR_MIN * len(parts) and pos + total <= start + self.file_size:
            fd = self.fds.get(start)
            if fd is None:
                fd = self._open(start)
            self._reserve(start, fd, pos - start + total)
            done = faults.pwritev(fd, parts, pos - start)
            if done < total:  # a short write: finish the rest the plain way
                self.write(pos + done, b"".join(parts)[done:], advance_end=False)
            if advance_end and pos + total > self.end:
                self.end = pos + total
            return
        self.write(pos, parts[0] if len(parts) == 1 else b"".join(parts), advance_end)

    def read(self, pos: int, n: int) -> bytes:
        """Up to `n` bytes from `pos`; shorter where files end or are missing."""
        out = []
        while n > 0:
            start = self.file_start(pos)
            fd = self.fds.get(start)
            if fd is None:
                break
            want = min(n, start + self.file_size - pos)
            chunk = os.pread(fd, want, pos - start)
            out.append(chunk)
            pos += len(chunk)
            n -= len(chunk)
            if len(chunk) < want:
                break  # the file ends here
        return out[0] if len(out) == 1 else b"".join(out)

    def open_range(self, pos: int, n: int) -> tuple[int, int] | None:
        """(a new fd, offset in its file) for the `n` bytes at `pos` when one file holds them all, else
        None. The fd is the caller's to close: it keeps the file readable (for sendfile) even if
        retention removes it meanwhile."""
        start = self.file_start(pos)
        fd = self.fds.get(start)
        if fd is None or pos + n > start + self.file_size or pos + n > self.end:
            return None
        return os.dup(fd), pos - start

    def truncate(self, pos: int) -> None:
        """Drop everything at and after `pos`."""
        for start in [s for s in self.starts if s >= pos]:
            self._remove(start)
        start = self.file_start(pos)
        if start in self.fds:
            os.ftruncate(self.fds[start], pos - start)  # frees the blocks reserved past it too
            self._reserved[start] = min(self._reserved.get(start, 0), pos - start)
        self.end = pos
        self.synced = min(self.synced, pos)

    def _remove(self, start: int) -> None:
        self._reserved.pop(start, None)
        os.close(self.fds.pop(start))
        self.starts.remove(start)
        try:
            os.unlink(os.path.join(self.dir, file_name(start)))
        except FileNotFoundError:
            pass

    def remove_before(self, pos: int) -> list[int]:
        """Delete whole files that end at or before `pos` (never the last file); returns their starts."""
        detached = self.detach_before(pos)
        release(detached)
        return [start for start, _fd, _path in detached]

    def detach_before(self, pos: int) -> list[tuple[int, int, str]]:
        """Forget whole files that end at or before `pos` (never the last file), without touching the
        disk: (start, fd, path) of each, for the caller to unlink and close (see `release`)."""
        gone = []
        for start in [s for s in self.starts[:-1] if s + self.file_size <= pos]:
            self.starts.remove(start)
            self._reserved.pop(start, None)
            gone.append((start, self.fds.pop(start), os.path.join(self.dir, file_name(start))))
        return gone

    def mtime(self, start: int) -> float:
        return os.fstat(self.fds[start]).st_mtime

    def sync(self) -> int:
        """fdatasync every file touched since the last sync; returns the new synced position."""
        end = self.end
        for start in list(self.starts):
            if start + self.file_size > self.synced and start < end:
                fd = self.fds.get(start)
                if fd is not None:
                    os.fdatasync(fd)
        self.synced = max(self.synced, end)
        return end

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        self.starts.clear()


def release(detached) -> None:
    """Unlink and close files `detach_before` returned."""
    unlink(detached)
    for _start, fd, _path in detached:
        os.close(fd)


def unlink(detached) -> None:
    for _start, _fd, path in detached:
        try:
            faults.remove(path)
        except FileNotFoundError:
            pass
