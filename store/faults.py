"""The store's file writes, and a test-only fault seam over them (docs/internals.md, "Fault seam").

`pwrite`, `pwritev`, `open_file`, `allocate` and `write` are what the store writes its files with
(os.pwrite, os.pwritev, os.open, store.space.reserve, os.write). Unless the environment variable
ROCKETGATE_STORE_FAULTS is set when this module is first imported, they stay those functions and
nothing else runs. Set, `install` replaces them with ones that fail the way an fd limit, a failing device or a full
disk makes them fail, so tests can check that nothing acknowledged is lost. Never set it in
production. Its value: comma-separated rules,

    cq=P[:ERRNO/ERRNO...]  a ConsumeQueue write or file open fails with probability P (default
                           errnos EMFILE/ENOSPC/EIO)
    full=PATH              once PATH exists, what needs new disk blocks fails with ENOSPC as on a
                           full disk: ConsumeQueue writes (sparse files), CommitLog allocations
                           (fallocate) and checkpoint / config document writes; CommitLog writes into
                           blocks already allocated go on, as they do on a real full disk
    alloc=PATH             once PATH exists, the next CommitLog allocation fails with ENOSPC and
                           PATH is removed (one failed allocation)
    die=POINT:N            the process kills itself (SIGKILL, as kill -9) the Nth time it reaches
                           POINT: `commit` (a tier manifest just written, before the gateway noted it
                           and before any local delete) or `unlink` (a store file about to be deleted:
                           N=1 before retention's first unlink, N=2 once the first file went)
    seed=N                 seed of the random failures
"""
from __future__ import annotations

import errno
import logging
import os
import random
import signal

from store.space import reserve

log = logging.getLogger("rocketgate.store")

ENV = "ROCKETGATE_STORE_FAULTS"

pwrite = os.pwrite
pwritev = os.pwritev
open_file = os.open
allocate = reserve
write = os.write
remove = os.unlink


def reached(point: str) -> None:
    """A named point of the store's work (`die=` rules); nothing unless the seam is installed."""


_installed = False


def install(spec: str | None) -> None:
    """Activate the rules of `spec` (the value of ROCKETGATE_STORE_FAULTS); None or "" does nothing.
    Once per process: later calls are ignored."""
    global _installed, pwrite, pwritev, open_file, allocate, write, remove, reached
    if not spec or _installed:
        return
    _installed = True
    rules = _Rules(spec)
    log.warning("store: TEST FAULT SEAM ACTIVE (%s=%s): file writes fail on purpose", ENV, spec)
    real_pwrite, real_pwritev, real_open, real_allocate, real_write = pwrite, pwritev, open_file, allocate, write

    def faulty_pwrite(fd, data, offset):
        rules.before_write(_kind_of_fd(fd))
        return real_pwrite(fd, data, offset)

    def faulty_pwritev(fd, buffers, offset):
        rules.before_write(_kind_of_fd(fd))
        return real_pwritev(fd, buffers, offset)

    def faulty_open(path, flags, mode=0o777):
        rules.before_open(_kind_of_path(path))
        return real_open(path, flags, mode)

    def faulty_allocate(fd, offset, length):
        rules.before_allocate()
        return real_allocate(fd, offset, length)

    def faulty_write(fd, data):  # checkpoints and config documents (store.config.atomic_write)
        rules.before_document_write()
        return real_write(fd, data)

    def faulty_remove(path):
        rules.reached("unlink")
        return os.unlink(path)

    pwrite, pwritev, open_file, allocate, write = faulty_pwrite, faulty_pwritev, faulty_open, faulty_allocate, faulty_write
    remove, reached = faulty_remove, rules.reached


def _kind_of_path(path: str) -> str:
    parts = str(path).split(os.sep)
    return "cq" if "consumequeue" in parts else "cl" if "commitlog" in parts else "other"


def _kind_of_fd(fd: int) -> str:
    try:
        return _kind_of_path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return "other"


class _Rules:
    def __init__(self, spec: str) -> None:
        self.cq_probability = 0.0
        self.cq_errnos = [errno.EMFILE, errno.ENOSPC, errno.EIO]
        self.full_path = self.alloc_path = None
        self.die_point, self.die_at, self.reached_count = None, 0, 0
        seed = None
        for rule in spec.split(","):
            name, _, value = rule.strip().partition("=")
            if name == "cq":
                p, _, errnos = value.partition(":")
                self.cq_probability = float(p)
                if errnos:
                    self.cq_errnos = [getattr(errno, e) for e in errnos.split("/")]
            elif name == "full":
                self.full_path = value
            elif name == "alloc":
                self.alloc_path = value
            elif name == "die":
                point, _, n = value.partition(":")
                self.die_point, self.die_at = point, int(n or 1)
            elif name == "seed":
                seed = int(value)
            elif name:
                raise ValueError(f"{ENV}: unknown rule {rule!r}")
        self.rng = random.Random(seed)

    def reached(self, point: str) -> None:
        if point == self.die_point:
            self.reached_count += 1
            if self.reached_count == self.die_at:
                log.warning("store: fault seam: killing the process at %s #%d", point, self.die_at)
                logging.shutdown()
                os.kill(os.getpid(), signal.SIGKILL)

    def _disk_full(self) -> bool:
        return self.full_path is not None and os.path.exists(self.full_path)

    def _random_cq_failure(self) -> None:
        if self.cq_probability and self.rng.random() < self.cq_probability:
            err = self.rng.choice(self.cq_errnos)
            raise OSError(err, f"{os.strerror(err)} (fault seam)")

    def before_write(self, kind: str) -> None:
        if kind == "cq":
            if self._disk_full():
                raise OSError(errno.ENOSPC, "No space left on device (fault seam)")
            self._random_cq_failure()

    def before_open(self, kind: str) -> None:
        if kind == "cq":
            self._random_cq_failure()

    def before_allocate(self) -> None:
        if self._disk_full():
            raise OSError(errno.ENOSPC, "No space left on device (fault seam)")
        if self.alloc_path is not None and os.path.exists(self.alloc_path):
            try:
                os.unlink(self.alloc_path)
            except FileNotFoundError:
                return
            raise OSError(errno.ENOSPC, "No space left on device (fault seam: one allocation)")

    def before_document_write(self) -> None:
        if self._disk_full():
            raise OSError(errno.ENOSPC, "No space left on device (fault seam)")


install(os.environ.get(ENV))
