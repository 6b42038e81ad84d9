"""Fencing in the index write (docs/diskless.md, "Index"): two gateways that both believe they lead a
queue write its next entry with If-None-Match: * on a real S3 server (SeaweedFS). The store lets one
win; the other can neither overwrite it nor commit the same offsets: it learns the winner's entry and
commits after it. A paused old leader's stale entry is refused outright."""
from __future__ import annotations

import concurrent.futures

import pytest

from objstore_fixtures import object_store_on
from store.diskless import layout
from store.diskless.index import AlreadyApplied, DisklessIndex
from store.objstore.api import ObjectStoreError, PreconditionFailed

RUN = b"x" * 10  # the bytes do not matter to the index


@pytest.fixture
def two_gateways(seaweed_s3, s3_bucket):
    stores = [object_store_on(seaweed_s3, s3_bucket, prefix="p/") for _ in range(2)]
    yield [DisklessIndex(s) for s in stores]
    for s in stores:
        s.close()


def test_both_believe_they_lead_and_neither_commits_the_others_offsets(two_gateways, caplog):
    a, b = two_gateways
    assert a.refresh("t", 0) == b.refresh("t", 0) == 0  # both see the same tail: slot 0, offset 0
    first = a.commit("t", 0, "wal-a", 0, RUN, 5)
    second = b.commit("t", 0, "wal-b", 0, RUN, 3)  # b's write of slot 0 is refused; it goes after a's
    assert (first.seq, first.base, first.end) == (0, 0, 5)
    assert (second.seq, second.base, second.end) == (1, 5, 8)
    stored = [layout.IndexEntry.decode(a.store.get(layout.index_key("t", 0, seq))) for seq in (0, 1)]
    assert [(e.wal, e.base, e.count) for e in stored] == [("wal-a", 0, 5), ("wal-b", 5, 3)]
    # the lost race is logged: the fault harness counts how often fencing acted (tests/faults/diskless.py)
    assert [r.getMessage() for r in caplog.records if " fenced: slot " in r.getMessage()] == \
        ["diskless t-0: fenced: slot 0 was taken by another writer; committing after it"]


def test_a_paused_leaders_stale_entry_is_refused(two_gateways):
    a, b = two_gateways
    a.commit("t", 1, "wal-a", 0, RUN, 4)
    stale = layout.IndexEntry(0, 0, 2, "wal-old", 0, len(RUN))  # what the old leader meant to write
    with pytest.raises(PreconditionFailed):
        b.store.put(layout.index_key("t", 1, 0), stale.encode(), if_absent=True)
    assert layout.IndexEntry.decode(a.store.get(layout.index_key("t", 1, 0))).wal == "wal-a"


def test_concurrent_commits_get_disjoint_contiguous_offsets(two_gateways):
    a, b = two_gateways

    def commits(index: DisklessIndex, wal: str) -> list:
        return [index.commit("t", 2, wal, i, RUN, 2) for i in range(10)]

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = [pool.submit(commits, a, "wal-a"), pool.submit(commits, b, "wal-b")]
        entries = [e for f in done for e in f.result()]
    ranges = sorted((e.base, e.end) for e in entries)
    assert ranges == [(2 * i, 2 * i + 2) for i in range(20)]  # every offset once, no gap, no overlap
    assert a.refresh("t", 2) == b.refresh("t", 2) == 40


def test_a_damaged_index_entry_or_wal_range_is_an_error_not_a_crash(two_gateways):
    a, _ = two_gateways
    a.store.put(layout.index_key("t", 3, 0), b"{not json")
    with pytest.raises(ObjectStoreError):
        a.refresh("t", 3)
    a.store.put("wal-bad", b"\x00" * 20)
    entry = layout.IndexEntry(0, 0, 1, "wal-bad", 0, 20)
    a.store.put(layout.index_key("t", 4, 0), entry.encode())
    a.refresh("t", 4)
    with pytest.raises(ObjectStoreError):
        a.read("t", 4, 0, 1000)


def test_two_gateways_applying_one_transaction_end_append_its_batch_once(two_gateways):
    """Two gateways completing the same decided commit at once (a paused coordinator and its
    successor), or one retrying after a kill -9 between its append and the deletion of the staged
    copy: the batch's entry names it (`applied`), and a writer that would append it again learns
    that entry before it wins a slot, so it is appended once."""
    a, b = two_gateways
    batch = (7, 0, 0)  # producer id, epoch, first sequence
    a.commit("t", 3, "wal-p", 0, b"", 2, producers=((*batch, 2, 0),))  # its placeholder, at produce time
    a.refresh("t", 3)
    b.refresh("t", 3)  # both completers know the queue up to the placeholder

    def apply(index: DisklessIndex, wal: str):
        try:
            return index.commit("t", 3, wal, 0, RUN, 2, applied=(batch,))
        except AlreadyApplied:
            return None

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = [f.result() for f in [pool.submit(apply, a, "wal-a"), pool.submit(apply, b, "wal-b")]]
    assert sum(e is not None for e in done) == 1  # one appended it; the other learned it was in
    with pytest.raises(AlreadyApplied):  # a retry later, by either
        b.commit("t", 3, "wal-c", 0, RUN, 2, applied=(batch,))
    assert a.refresh("t", 3) == 4
    stored = [layout.IndexEntry.decode(a.store.get(layout.index_key("t", 3, seq))) for seq in (0, 1)]
    assert [e.applied for e in stored] == [(), (batch,)]
    assert a.commit("t", 3, "wal-d", 0, RUN, 1).end == 5  # other writes go on
