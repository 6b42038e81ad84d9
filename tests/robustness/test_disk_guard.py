"""store.space.DiskGuard decisions with a scripted filesystem (the real-filesystem test is
test_disk_full.py)."""
from __future__ import annotations

import errno
import os

import pytest

import store
from store import space


class FakeFs:
    def __init__(self, total_blocks: int, free_blocks: int) -> None:
        self.total, self.free = total_blocks, free_blocks

    def __call__(self, _path):
        return os.statvfs_result((4096, 4096, self.total, self.free, self.free, 0, 0, 0, 0, 255))


@pytest.fixture
def fs(monkeypatch):
    f = FakeFs(1000, 1000)
    monkeypatch.setattr(space.os, "statvfs", f)
    return f


def guard(ratio=0.75):
    now = [0.0]
    g = space.DiskGuard("/x", ratio, clock=lambda: now[0])
    return g, now


def test_writes_refused_above_the_ratio_and_resumed_below(fs):
    g, now = guard()
    g.check()
    fs.free = 200  # 80 % used
    now[0] += space.CHECK_INTERVAL
    with pytest.raises(store.StoreFull, match=r"the broker's disk is full \[CL:  0.80 CQ:  0.80 INDEX:  0.80\]"):
        g.check()
    with pytest.raises(store.StoreFull):
        g.check()
    fs.free = 300  # 70 %: resumes by itself (while full, every append looks again: no headroom left)
    g.check()


def test_after_a_failed_allocation_below_the_ratio_one_append_a_look_tries_again(fs):
    """Issue 30: a failed allocation at 50 % used (limit 75 %) refused writes for the rest of the
    run, until more than 1 MiB was freed; now each look lets one append try, and a written one
    resumes writes."""
    g, now = guard()
    fs.free = 500  # 50 % used: under the ratio, but the file did not fit
    err = g.allocation_failed(OSError(errno.ENOSPC, "No space left on device"))
    assert isinstance(err, store.StoreFull)
    with pytest.raises(store.StoreFull):
        g.check()  # no look yet: refused
    now[0] += space.CHECK_INTERVAL
    g.check(100)  # a look below the ratio: this append may try; it fails to allocate again
    g.allocation_failed(OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(store.StoreFull):
        g.check(100)
    now[0] += space.CHECK_INTERVAL
    g.check(100)  # the next try is written ...
    g.check(200)  # ... which the next append sees: writes resume
    assert not g.full
    g.check(300)


def test_a_failed_allocation_above_the_ratio_lets_nothing_try(fs):
    g, now = guard()
    fs.free = 100  # 90 % used
    g.allocation_failed(OSError(errno.ENOSPC, "No space left on device"))
    now[0] += space.CHECK_INTERVAL
    with pytest.raises(store.StoreFull):
        g.check()


def test_written_bytes_bring_the_next_look_forward(fs):
    g, now = guard()
    g.check(0)  # headroom: 75 % of 4 MB
    fs.free = 100
    with pytest.raises(store.StoreFull):
        g.check(3 << 20)  # more than half the headroom written: looked at again at once


def test_ratio_is_clamped_as_rocketmq_clamps_it():
    assert space.clamp_ratio(0.99) == 0.95 and space.clamp_ratio(0.01) == 0.10
