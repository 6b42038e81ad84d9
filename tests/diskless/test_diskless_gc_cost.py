"""What a janitor pass costs (issue 28): garbage collection read every index entry of the bucket at
each pass (one GET per entry, growing with the data); now it lists the entries and reads again only
those whose ETag changed, still from the store: an entry another gateway's compaction rewrote is
read again, so the segment it moved to is kept. And it listed every entry twice per pass (retention
and the references); now retention asks for the first key only, and the references list only the
entries after each queue's settled front run (S3 StartAfter). In-process, on a real SeaweedFS
bucket, the requests counted at an HTTP proxy in front of it."""
from __future__ import annotations

import collections

from objstore_fixtures import object_store_on
from s3_refusing_proxy import RefusingProxy
from store.diskless.index import DisklessIndex
from store.diskless.janitor import Janitor
from test_diskless_gc_inflight import _batch, _put

ENTRIES = 60  # per queue, two queues
SETTLED_ENTRIES = 12  # per queue, two queues, compacted


class CountingStore:
    """The object store, counting GETs and the keys its listings return."""

    def __init__(self, store) -> None:
        self.store, self.gets, self.listed = store, 0, 0

    def __getattr__(self, name):
        return getattr(self.store, name)

    def get(self, *args, **kwargs):
        self.gets += 1
        return self.store.get(*args, **kwargs)

    def list(self, *args, **kwargs):
        for info in self.store.list(*args, **kwargs):
            self.listed += 1
            yield info


def test_a_pass_over_unchanged_entries_reads_none_of_them_again(seaweed_s3, s3_bucket):
    stores = [object_store_on(seaweed_s3, s3_bucket, prefix="p/") for _ in range(2)]
    try:
        writer = DisklessIndex(stores[0])
        writer.publish_topic("t", 2)
        run = _batch()
        wal = _put(stores[0], run)
        for queue in (0, 1):
            for _ in range(ENTRIES):
                writer.commit("t", queue, wal, 0, run, 1)
        counting = CountingStore(stores[1])
        janitor = Janitor(DisklessIndex(counting), grace_s=0)
        passes = []
        for _ in range(3):
            before = counting.gets
            janitor.run_once({}, 0, compact=False)
            passes.append(counting.gets - before)
        print("GETs per pass:", passes)
        assert passes[0] >= 2 * ENTRIES  # the first pass reads every entry
        assert passes[1] < 10 and passes[2] < 10  # then: a probe per queue and the topic records
    finally:
        for s in stores:
            s.close()


def test_an_entry_rewritten_by_another_gateways_compaction_is_read_again(seaweed_s3, s3_bucket):
    """The ETag cache must not turn back into trusting memory: after another janitor compacted the
    entries into a segment, this one's next pass sees them name the segment and keeps it."""
    stores = [object_store_on(seaweed_s3, s3_bucket, prefix="p/") for _ in range(2)]
    try:
        writer = DisklessIndex(stores[0])
        writer.publish_topic("t", 1)
        run = _batch()
        for _ in range(4):
            writer.commit("t", 0, _put(stores[0], run), 0, run, 1)
        mine = Janitor(DisklessIndex(stores[1]), grace_s=0)
        mine.run_once({}, 0, compact=False)  # every entry read and remembered
        Janitor(DisklessIndex(stores[0]), grace_s=0).run_once({}, 0)  # another gateway compacts
        mine.run_once({}, 0, compact=False)
        fresh = DisklessIndex(stores[0])
        assert fresh.refresh("t", 0) == 4
        assert len(fresh.read("t", 0, 0, 1 << 20)) == 4 * len(run)  # the segment is still there
    finally:
        for s in stores:
            s.close()


def test_a_pass_over_settled_compacted_entries_lists_only_the_newest(seaweed_s3, s3_bucket):
    """2 queues x 12 entries, compacted into segments: once settled, a pass lists a few keys per
    queue, not every entry (before: 2 x 12 per queue, retention's listing and the references')."""
    writer_store = object_store_on(seaweed_s3, s3_bucket, prefix="p/")
    requests = collections.Counter()
    with RefusingProxy(seaweed_s3.endpoint) as proxy:
        proxy.refuse = lambda method, path: requests.update(["LIST" if "list-type=" in path else method]) and False
        counting = CountingStore(object_store_on(seaweed_s3, s3_bucket, prefix="p/", endpoint=proxy.endpoint))
        try:
            writer = DisklessIndex(writer_store)
            writer.publish_topic("t", 2)
            run = _batch()
            wal = _put(writer_store, run)
            for queue in (0, 1):
                for _ in range(SETTLED_ENTRIES):
                    writer.commit("t", queue, wal, 0, run, 1)
            janitor = Janitor(DisklessIndex(counting), grace_s=0)
            janitor.settle_s = 0  # (the default waits two commit deadlines before trusting a segment-held entry)
            passes = []
            for _ in range(4):
                requests.clear()
                before = counting.listed
                janitor.run_once({}, 0)
                passes.append((counting.listed - before, dict(requests)))
            print("keys listed and S3 requests per pass:", passes)
            assert janitor.stats.entries_compacted == 2 * (SETTLED_ENTRIES - 1)
            listed, last = passes[-1]
            assert listed < 12, passes  # the newest entry of each queue, the topic record, segments, WAL objects
            assert sum(n for m, n in last.items()) < 20, passes
            reader = DisklessIndex(writer_store)
            assert reader.refresh("t", 0) == SETTLED_ENTRIES
            assert len(reader.read("t", 0, 0, 1 << 20)) == SETTLED_ENTRIES * len(run)  # every segment still there
        finally:
            counting.close()
            writer_store.close()
