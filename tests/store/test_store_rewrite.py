"""store.rewrite (compaction): units of existing offsets point at a new entry, which takes no new
offsets and no other dispatcher sees; the rewritten view survives a reopen, a lost consumequeue/
directory and a crash before the ConsumeQueue was written (recovery's replay points the units again)."""
import os
import shutil

import pytest

import store
from store import Message, StoreConfig, StoreError


def _open(path):
    return store.open(str(path), StoreConfig(commitlog_file_size=64 * 1024, cq_units_per_file=100, index_slots=64,
                                             index_entries=256))


def _phys(s, start, end):
    return [u[0] for u in s.units("T", 0, start, end - start)]


class Seen:
    def __init__(self):
        self.requests = []

    def dispatch(self, requests):
        self.requests += requests


def _filled(path, n=10):
    s = _open(path)
    s.topics.create("T", 1, 1)
    for i in range(n):
        s.append(Message("T", 0, b"m%d" % i, {}))
    return s


def test_rewrite_points_units_and_takes_no_offsets(tmp_path):
    s = _filled(tmp_path)
    seen = Seen()
    s.add_dispatcher(seen)
    before = _phys(s, 0, 10)
    r = s.rewrite("T", 0, 2, 6, b"compacted")
    assert s.max_offset("T", 0) == 10 and r.queue_offset == 2
    assert _phys(s, 0, 10) == before[:2] + [r.physical_offset] * 4 + before[6:]
    assert s.get(r.physical_offset).body == b"compacted"
    assert seen.requests == []  # no new message for long polls, views or the index
    s.append(Message("T", 0, b"m10", {}))
    assert s.max_offset("T", 0) == 11
    with pytest.raises(StoreError):
        s.rewrite("T", 0, 8, 12, b"past the end")
    s.close()
    s = _open(tmp_path)
    assert _phys(s, 2, 6) == [r.physical_offset] * 4
    s.close()


def test_lost_consumequeue_is_rebuilt_with_the_rewrites(tmp_path):
    s = _filled(tmp_path)
    first = s.rewrite("T", 0, 0, 5, b"a")
    second = s.rewrite("T", 0, 0, 8, b"b")  # a later pass over the same offsets wins
    expected = _phys(s, 0, 10)
    assert expected[:8] == [second.physical_offset] * 8 and first.physical_offset not in expected
    s.close()
    shutil.rmtree(os.path.join(str(tmp_path), "consumequeue"))
    s = _open(tmp_path)
    assert _phys(s, 0, 10) == expected and s.max_offset("T", 0) == 10
    s.close()


@pytest.mark.parametrize("start,end", [(0, 5), (5, 10), (3, 7)])
def test_crash_before_the_consumequeue_was_written(tmp_path, start, end):
    s = _filled(tmp_path / "live")
    s.close()  # checkpoints here
    s = _open(tmp_path / "live")
    r = s.rewrite("T", 0, start, end, b"c")
    for i in range(10, 15):
        s.append(Message("T", 0, b"m%d" % i, {}))
    expected = _phys(s, 0, 15)
    s.flush()  # the CommitLog is on disk; the checkpoints are not moved
    shutil.copytree(tmp_path / "live", tmp_path / "crashed")  # what a kill -9 leaves
    s.close()
    c = _open(tmp_path / "crashed")
    assert _phys(c, 0, 15) == expected
    assert expected[start:end] == [r.physical_offset] * (end - start)
    assert [c.get(p).body for p in expected[end:]] == [b"m%d" % i for i in range(end, 15)]
    c.close()
