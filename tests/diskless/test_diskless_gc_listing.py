"""What a janitor pass lists of the WAL and segment objects (issue 28): every pass listed all of
them, and segments stay until retention (one per 8 MiB of a queue), so the cost grew with the data.
Now their keys start with the time they were named (store.diskless.layout) and a pass lists only
those named since the previous pass began (S3 StartAfter), knowing the older ones from before; an
object it knows that retention left unreferenced still goes. In-process, on a real SeaweedFS bucket,
the keys counted as the server lists them and the LIST requests at an HTTP proxy in front of it."""
from __future__ import annotations

import collections
import time
import uuid

from objstore_fixtures import object_store_on
from s3_refusing_proxy import RefusingProxy
from store.diskless import layout
from store.diskless.index import DisklessIndex
from store.diskless.janitor import Janitor
from test_diskless_gc_inflight import _batch

ENTRIES = 6  # per queue, two queues, each in its own WAL object


class KeyCounter:
    """The object store, counting the keys its listings return per listed prefix."""

    def __init__(self, store) -> None:
        self.store, self.listed = store, collections.Counter()

    def __getattr__(self, name):
        return getattr(self.store, name)

    def list(self, prefix="", *args, **kwargs):
        for info in self.store.list(prefix, *args, **kwargs):
            self.listed[prefix] += 1
            yield info


def _wal(store, data: bytes) -> str:
    key = f"{layout.WAL}{int(time.time() * 1000):013d}-{uuid.uuid4().hex}"  # as gateways name them now
    store.put(key, data, if_absent=True)
    return key


def test_a_pass_lists_only_the_wal_and_segment_objects_named_since_the_last_one(seaweed_s3, s3_bucket):
    writer_store = object_store_on(seaweed_s3, s3_bucket, prefix="p/")
    lists = collections.Counter()
    with RefusingProxy(seaweed_s3.endpoint) as proxy:
        proxy.refuse = lambda method, path: lists.update(["LIST"] if "list-type=" in path else []) and False
        counting = KeyCounter(object_store_on(seaweed_s3, s3_bucket, prefix="p/", endpoint=proxy.endpoint))
        try:
            writer = DisklessIndex(writer_store)
            writer.publish_topic("t", 2)
            run = _batch()
            for queue in (0, 1):
                for _ in range(ENTRIES):
                    writer.commit("t", queue, _wal(writer_store, run), 0, run, 1)
            # two entries per segment: 2 x 2 segments, 2 x 2 WAL objects left (the newest entries')
            janitor = Janitor(DisklessIndex(counting), grace_s=0, segment_bytes=2 * len(run))
            janitor.settle_s = 0
            janitor.list_margin_s = 0  # (the default allows a minute for other gateways' clocks)
            passes = []
            for _ in range(4):
                counting.listed.clear()
                lists.clear()
                janitor.run_once({}, 0)
                passes.append((counting.listed[layout.WAL] + counting.listed[layout.SEGMENTS], lists["LIST"]))
                time.sleep(0.01)  # (a new millisecond: the next pass's names come after this one's)
            print("WAL + segment keys listed, LIST requests per pass:", passes)
            left = [i.key for i in writer_store.list(layout.WAL)] + [i.key for i in writer_store.list(layout.SEGMENTS)]
            assert janitor.stats.segments_written == 4 and len(left) == 8, left
            assert passes[0][0] >= 2 * ENTRIES  # the first pass lists them all
            assert passes[-1][0] == 0, passes  # before: every WAL and segment object, each pass

            writer.commit("t", 0, _wal(writer_store, run), 0, run, 1)  # a new one is still found
            janitor.run_once({"t": (-1, 0)}, 0)  # retention keeps only each queue's newest entry
            janitor.run_once({"t": (-1, 0)}, 0)
            left = [i.key for i in writer_store.list(layout.WAL)] + [i.key for i in writer_store.list(layout.SEGMENTS)]
            assert len(left) == 2, left  # the segments retention left unreferenced went, though never listed again
            reader = DisklessIndex(writer_store)
            assert reader.refresh("t", 0) == ENTRIES + 1 and reader.refresh("t", 1) == ENTRIES
            assert len(reader.read("t", 0, ENTRIES, 1 << 20)) == len(run)
            assert len(reader.read("t", 1, ENTRIES - 1, 1 << 20)) == len(run)
        finally:
            counting.close()
            writer_store.close()
