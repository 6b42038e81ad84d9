"""ShareFetch of diskless partitions (docs/diskless.md, "Share groups"): the pop engine leases their
offsets through `semantics.diskless_queues` from the index, refreshed here off the loop before each
acquire; the acquired ranges' batches are read from the WAL or segment objects (the index's cache
first) after the acquire, also off the loop. Share-partition state stays the pop engine's, as for
every topic."""
from __future__ import annotations

import trio

import gateway.kafka.errors as errors
from semantics.diskless import is_diskless
from store.objstore.api import ObjectStoreError


def is_diskless_partition(app, topic: str) -> bool:
    return app.diskless is not None and is_diskless(app.store.topics.get(topic))


async def refresh(app, partitions) -> set:
    """Read the index news of the diskless ones among `partitions`; those the store failed for."""
    failed = set()
    for topic, p in partitions:
        if is_diskless_partition(app, topic):
            try:
                await trio.to_thread.run_sync(app.diskless.index.refresh, topic, p)
            except ObjectStoreError:
                failed.add((topic, p))
    return failed


def byte_end(app, topic: str, partition: int, start: int, reach: int, max_bytes: int) -> int:
    """As `share_fetch.byte_end` for a diskless queue: the end of the index entries from the one
    holding `start` whose sizes fit in `max_bytes` (the first one whatever its size), within `reach`."""
    total, end = 0, start
    for entry in app.diskless.index.entries(topic, partition):
        if entry.end <= start:
            continue
        if end > start and total + entry.size > max_bytes or entry.base >= reach:
            break
        total += entry.size
        end = entry.end
    return min(end, reach) if end > start else start


def _needed_bytes(app, topic: str, partition: int, first: int, last: int) -> int:
    return sum(e.size for e in app.diskless.index.entries(topic, partition) if e.end > first and e.base <= last)


async def read_acquired(app, pending: dict, fetched: dict) -> None:
    """Fill `fetched[(topic, partition)]["records"]` for the diskless partitions in `pending`
    ((topic, partition) -> (first, last) acquired); a store failure answers KAFKA_STORAGE_ERROR (the
    leases run out and the records come again)."""
    for (topic, p), (first, last) in pending.items():
        index = app.diskless.index
        try:
            fetched[(topic, p)]["records"] = await trio.to_thread.run_sync(
                index.read, topic, p, first, max(_needed_bytes(app, topic, p, first, last), 1))
        except ObjectStoreError:
            fetched[(topic, p)] = {"error_code": errors.KAFKA_STORAGE_ERROR, "records": b"", "acquired_records": []}
