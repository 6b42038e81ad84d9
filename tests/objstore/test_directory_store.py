"""store.objstore.directory: the object store the shards of --shards N share their table catalog in.
Its if_absent write is the catalog's compare-and-swap, so of two writers of one key only the first
wins, also across processes; keys stay inside the root; the temporary files are never listed."""
from __future__ import annotations

import multiprocessing

import pytest

from store.objstore.api import NotFound, PreconditionFailed
from store.objstore.directory import DirectoryObjectStore


def _claim(root: str, who: int, results) -> None:
    try:
        DirectoryObjectStore(root).put("catalog/t/000000000001", b"%d" % who, if_absent=True)
        results.put(who)
    except PreconditionFailed:
        results.put(-1)


def test_if_absent_is_won_once_across_processes(tmp_path):
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(str(tmp_path), i, results)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    won = [w for w in (results.get(timeout=5) for _ in procs) if w >= 0]
    assert len(won) == 1
    assert DirectoryObjectStore(str(tmp_path)).get("catalog/t/000000000001") == b"%d" % won[0]


def test_put_get_list_delete(tmp_path):
    s = DirectoryObjectStore(str(tmp_path))
    s.put("catalog/rocketgate/b/000000000000", b"m0")
    s.put("catalog/rocketgate/a/000000000001", b"m1")
    s.put("catalog/rocketgate/a/000000000000", b"m0")
    s.put("catalog/rocketgate/a/000000000000", b"again")  # a plain put replaces
    assert [o.key for o in s.list("catalog/rocketgate/a/")] == ["catalog/rocketgate/a/000000000000",
                                                                 "catalog/rocketgate/a/000000000001"]
    assert [o.key for o in s.list("catalog/rocketgate/", start_after="catalog/rocketgate/a/000000000001")] == \
        ["catalog/rocketgate/b/000000000000"]
    assert [o.key for o in s.list("", limit=1)] == ["catalog/rocketgate/a/000000000000"]
    assert s.get("catalog/rocketgate/a/000000000000") == b"again"
    assert s.get("catalog/rocketgate/a/000000000001", 1) == b"1"
    assert s.head("catalog/rocketgate/a/000000000001").size == 2
    s.delete("catalog/rocketgate/a/000000000001")
    s.delete("catalog/rocketgate/a/000000000001")  # absent: no error
    assert s.head("catalog/rocketgate/a/000000000001") is None
    with pytest.raises(NotFound):
        s.get("catalog/rocketgate/a/000000000001")
    assert all(not o.key.startswith(".tmp") for o in s.list(""))


@pytest.mark.parametrize("key", ["", "/etc/passwd", "../x", "a/../../x", "a//b", ".tmp/x"])
def test_keys_outside_the_root_are_refused(tmp_path, key):
    with pytest.raises(ValueError):
        DirectoryObjectStore(str(tmp_path)).put(key, b"x")
