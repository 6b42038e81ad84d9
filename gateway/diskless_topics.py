"""DeleteTopics and CreatePartitions of diskless topics, and following them from the bucket
(docs/diskless.md, "Deleting and adding partitions"): the bucket's topic record is what every
gateway adopts, so it changes first (`store.diskless.topic_records`), then this gateway's topic
table; the other gateways' `TopicWatch` sees the record change, go or come back as a new
incarnation and does the same to theirs."""
from __future__ import annotations

import logging

import trio

from semantics.diskless import ATTRIBUTE, is_diskless
from store.diskless import topic_records
from store.objstore.api import ObjectStoreError

log = logging.getLogger("rocketgate")


async def delete(app, name: str) -> str | None:
    """Delete the diskless topic from the bucket; why it failed, or None (then delete it locally)."""
    try:
        await trio.to_thread.run_sync(topic_records.delete_topic, app.diskless.index, name)
    except ObjectStoreError as exc:
        return f"diskless topic not deleted from the object store: {exc}"
    forget_local(app.diskless, name)
    app.diskless.topic_homes.pop(name, None)
    return None


async def grow(app, name: str, partitions: int) -> str | None:
    """Record the diskless topic's new partition count in the bucket; why it failed, or None."""
    try:
        await trio.to_thread.run_sync(topic_records.grow_topic, app.diskless.index, name, partitions)
    except ObjectStoreError as exc:
        return f"diskless topic's partitions not recorded in the object store: {exc}"
    return None


def forget_local(diskless, name: str) -> None:
    """This gateway's producer bookkeeping of the topic: a topic created again starts afresh."""
    diskless.producers_seeded.difference_update({k for k in diskless.producers_seeded if k[0] == name})
    for key in [k for k in diskless.inflight if k[1] == name]:
        del diskless.inflight[key]


def follow(st, diskless, changed: dict, gone: set) -> list[str]:
    """Apply a `topic_records.look` to the topic table: a record that went deletes the local diskless
    topic, a new incarnation of a known one replaces it, a grown one grows, a new one is created.
    What was done, for the log."""
    done, homes = [], diskless.topic_homes
    for name in sorted(gone):
        cfg = st.topics.get(name)
        homes.pop(name, None)
        if is_diskless(cfg):
            st.topics.delete(name)
            diskless.index.forget_topic(name)
            forget_local(diskless, name)
            done.append(f"deleted {name}")
    for name, (partitions, home) in sorted(changed.items()):
        cfg = st.topics.get(name)
        if cfg is not None and not is_diskless(cfg):
            continue  # a local plain topic of that name (made before the record came): left alone
        if cfg is not None and homes.get(name, home) != home:  # deleted and created again elsewhere
            st.topics.delete(name)
            forget_local(diskless, name)
            cfg = None
            done.append(f"replaced {name}")
        homes[name] = home
        if cfg is None:
            st.topics.create(name, read_queues=partitions, write_queues=partitions, attributes={ATTRIBUTE: "true"})
            diskless.active.set()
            done.append(f"created {name}")
        elif max(cfg.read_queues, cfg.write_queues) < partitions:
            cfg.read_queues = cfg.write_queues = partitions
            st.topics.update(cfg)
            done.append(f"grew {name} to {partitions}")
    return done
