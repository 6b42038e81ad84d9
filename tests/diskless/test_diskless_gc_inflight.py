"""Garbage collection against a WAL object whose index entry is still being committed (issue 28): a
janitor with a short grace (the tests' busy janitors run with none) deleted it between its writer's
PUT and the entry's commit, so an acknowledged batch was gone and every read of the queue failed
(a consumer got nothing, with the right end offsets). In-process, on a real SeaweedFS bucket."""
from __future__ import annotations

import uuid

from codec.kafka.records import BATCH_LENGTH_AT, LAST_OFFSET_DELTA_AT
from objstore_fixtures import object_store_on
from store.diskless import layout
from store.diskless.index import DisklessIndex
from store.diskless.janitor import Janitor
from store.objstore.api import NotFound


def _batch() -> bytes:
    """One record batch's bytes as the index serves them (only its framing is read)."""
    out = bytearray(61)
    out[BATCH_LENGTH_AT:BATCH_LENGTH_AT + 4] = (61 - layout.BATCH_OVERHEAD).to_bytes(4, "big")
    out[LAST_OFFSET_DELTA_AT:LAST_OFFSET_DELTA_AT + 4] = (0).to_bytes(4, "big")
    return bytes(out)


def test_a_wal_object_put_before_its_entry_survives_a_janitor_pass(seaweed_s3, s3_bucket):
    stores = [object_store_on(seaweed_s3, s3_bucket, prefix="p/") for _ in range(2)]
    try:
        writer, reader = DisklessIndex(stores[0]), DisklessIndex(stores[1])
        writer.publish_topic("t", 1)
        janitor = Janitor(DisklessIndex(stores[1]), grace_s=0)
        run = _batch()
        writer.commit("t", 0, _put(stores[0], run), 0, run, 1)  # a committed one: the queue exists
        in_flight = _put(stores[0], run)  # PUT, its entry not yet written (a loaded writer)
        janitor.run_once({}, 0)
        writer.commit("t", 0, in_flight, 0, run, 1)  # acknowledged to the producer
        assert stores[0].get(in_flight) == run
        assert reader.refresh("t", 0) == 2
        assert len(reader.read("t", 0, 0, 1 << 20)) == 2 * len(run)  # both batches, no error
        janitor.run_once({}, 0)  # referenced now: a later pass keeps it too
        assert stores[0].get(in_flight) == run
    finally:
        for s in stores:
            s.close()


def test_an_object_no_longer_referenced_still_goes_at_once_with_no_grace(seaweed_s3, s3_bucket):
    """The guard holds only objects never seen referenced: a compacted WAL object goes in the pass."""
    stores = [object_store_on(seaweed_s3, s3_bucket, prefix="p/")]
    try:
        index = DisklessIndex(stores[0])
        index.publish_topic("t", 1)
        run = _batch()
        wals = [_put(stores[0], run) for _ in range(3)]
        for wal in wals:
            index.commit("t", 0, wal, 0, run, 1)
        Janitor(index, grace_s=0).run_once({}, 0)  # the first two move into a segment
        for wal in wals[:2]:
            try:
                stores[0].get(wal)
                raise AssertionError(f"{wal} was compacted but not collected")
            except NotFound:
                pass
        fresh = DisklessIndex(stores[0])
        assert fresh.refresh("t", 0) == 3
        assert len(fresh.read("t", 0, 0, 1 << 20)) == 3 * len(run)  # from the segment and the last WAL object
    finally:
        for s in stores:
            s.close()


def _put(store, data: bytes) -> str:
    key = layout.WAL + uuid.uuid4().hex
    store.put(key, data, if_absent=True)
    return key
