"""Disk space as RocketMQ's DefaultMessageStore guards it: appends are refused (`StoreFull`) while
the store's filesystem is fuller than `disk_max_used_space_ratio` or since a file could not be
allocated; both are looked at again at most every CHECK_INTERVAL, so writes resume by themselves
once retention or an operator frees space (no restart). After a failed allocation, a look that
finds the disk below the ratio lets one append try again: writes resume when it succeeds.

CommitLog blocks are allocated for real ahead of the writes (`reserve`, 4 MB ahead; IndexFiles
with posix_fallocate before they are mapped), so a full disk is an OSError on allocation, never a SIGBUS on a mapped
page nor a half-written entry. ConsumeQueue files stay sparse (one per queue: reserving them would
cost 6 MB a queue); their pwrite fails cleanly.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import time

from store.errors import StoreError, StoreFull

log = logging.getLogger("rocketgate.store")

CHECK_INTERVAL = 1.0  # seconds between statvfs calls
MIN_RATIO, MAX_RATIO = 0.10, 0.95  # RocketMQ clamps diskMaxUsedSpaceRatio to [10, 95] %
SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_FALLOC_FL_KEEP_SIZE = 1

_libc = ctypes.CDLL(None, use_errno=True)  # the C library already loaded (find_library runs ldconfig)
_fallocate = getattr(_libc, "fallocate", None)
if _fallocate is not None:
    _fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    _fallocate.restype = ctypes.c_int


def is_space_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in SPACE_ERRNOS


def guard_space(space: "DiskGuard", step, *args):
    """`step(*args)`, a step of a CommitLog append: space errors become StoreFull (and refuse
    writes from now on), any other OSError a StoreError."""
    try:
        return step(*args)
    except StoreError as exc:
        if is_space_error(exc.__cause__):
            raise space.allocation_failed(exc.__cause__) from exc
        raise
    except OSError as exc:  # creating a ConsumeQueue (EMFILE, ENOSPC): nothing written yet
        if is_space_error(exc):
            raise space.allocation_failed(exc) from exc
        raise StoreError(f"cannot store message: {exc}") from exc


def reserve(fd: int, offset: int, length: int) -> None:
    """Allocate blocks for `length` bytes at `offset` of `fd` without changing its length (fallocate
    with FALLOC_FL_KEEP_SIZE: the length stays the written end, which recovery relies on). Raises
    OSError(ENOSPC) when the disk cannot hold them; a filesystem without fallocate is left as is
    (its writes still fail with ENOSPC, as pwrite does)."""
    if _fallocate is None or length <= 0:
        return
    if _fallocate(fd, _FALLOC_FL_KEEP_SIZE, offset, length) != 0:
        err = ctypes.get_errno()
        if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            return
        raise OSError(err, os.strerror(err))


def clamp_ratio(ratio: float) -> float:
    return min(max(ratio, MIN_RATIO), MAX_RATIO)


class DiskGuard:
    """`check()` raises `StoreFull` while writes must be refused; `allocation_failed(exc)` after a
    failed allocation or write for space. Called under the store lock (no locking of its own)."""

    def __init__(self, path: str, max_used_ratio: float = 0.75, clock=time.monotonic) -> None:
        self.path = path
        self.ratio = clamp_ratio(max_used_ratio)
        self.clock = clock
        self._checked_at = float("-inf")
        self._used = 0.0
        self._alloc_failed = False
        self._trying = None  # CommitLog end when `check` let one append try after a failed allocation
        self._headroom = 0  # bytes that could be written at the last look before passing the ratio
        self._written_at = 0
        self.full = False

    def used_ratio(self) -> float:
        """Used / (used + available to us), as df's Use% (blocks reserved for root do not count);
        also notes how many bytes may still be written before the ratio is reached."""
        st = os.statvfs(self.path)
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        usable = used + st.f_bavail * st.f_frsize
        self._headroom = max(0, int(usable * self.ratio) - used)
        return used / usable if usable > 0 else 0.0

    def remark(self) -> str:
        """RocketMQ's SERVICE_NOT_AVAILABLE remark, with its diskUtil() figures (one filesystem here)."""
        u = self._used
        return ("service not available now. It may be caused by one of the following reasons: the broker's "
                f"disk is full [CL: {u:5.2f} CQ: {u:5.2f} INDEX: {u:5.2f}], messages are put to the slave, "
                "message store has been shut down, etc.")

    def check(self, written: int = 0) -> None:
        """`written`: a count of bytes the store has written (the CommitLog end). The disk is looked
        at every CHECK_INTERVAL, and sooner once half the headroom left at the last look is written."""
        if self._trying is not None and written > self._trying:  # the append let through was written
            self._alloc_failed, self._trying = False, None
            self._set_full(self._used > self.ratio)
        now = self.clock()
        if now - self._checked_at >= CHECK_INTERVAL or written - self._written_at >= self._headroom // 2:
            self._checked_at, self._written_at = now, written
            try:
                self._used = self.used_ratio()
            except OSError:
                pass
            over = self._used > self.ratio
            if self._alloc_failed and not over:
                self._trying = written  # this append may try allocating again
                return
            self._set_full(over or self._alloc_failed)
        if self.full:
            raise StoreFull(self.remark())

    def allocation_failed(self, exc: OSError) -> StoreFull:
        """Refuse writes from now until a look (at most every CHECK_INTERVAL) finds the disk below
        the ratio and the one append it lets through is written, as the next `check` sees: a disk
        that stays full costs one refused append a second, logged once."""
        self._alloc_failed, self._trying = True, None
        try:
            self._used = self.used_ratio()
        except OSError:
            pass
        self._checked_at = self.clock()
        self._set_full(True, exc)
        return StoreFull(self.remark())

    def _set_full(self, full: bool, cause=None) -> None:
        if full != self.full:
            self.full = full
            if full:
                log.error("store: disk full (used %.0f %%, limit %.0f %%%s): refusing writes until space returns",
                          self._used * 100, self.ratio * 100, f"; {cause}" if cause else "")
            else:
                log.warning("store: disk space is back (used %.0f %%): writes resume", self._used * 100)
