"""Deleting and growing diskless topics in the bucket (docs/diskless.md, "Deleting and adding
partitions"). Blocking: call from worker threads.

A topic's record names its incarnation (`layout.home`); deleting it writes a tombstone for that
incarnation (the janitor deletes its index entries, then garbage collection its objects) and then
deletes the record, so a topic created again under the same name gets a new incarnation and never
sees the old entries, nor those a late writer adds to the old one. Growing rewrites the record with
the new partition count (same incarnation): every gateway adopts it from there.

Every change of a record is followed by a rewrite of `layout.TOPICS_CHANGED` (`mark_changed`), so a
gateway's topic watch asks one HEAD (`changed_mark`) instead of a LIST of the records while nothing
changes (docs/diskless.md, "Start and watch")."""
from __future__ import annotations

import json
import uuid

from store.diskless import configs as topic_configs
from store.diskless import layout
from store.diskless import offsets as group_offsets
from store.diskless.index import DisklessIndex
from store.objstore.api import NotFound, ObjectStoreError


def delete_topic(index: DisklessIndex, topic: str) -> None:
    """Tombstone the topic's incarnation, delete its record, its configs and its groups' offsets in the bucket."""
    try:
        partitions, home = index.topic_record(topic)
    except NotFound:  # deleted already (through another gateway)
        index.forget_topic(topic)
        return
    index.store.put(layout.DELETED + home, json.dumps({"partitions": partitions}).encode())
    index.store.delete(layout.topic_key(topic))
    mark_changed(index)
    index.forget_topic(topic)
    group_offsets.delete_topic(index.store, topic)
    topic_configs.delete_topic(index.store, topic)


def grow_topic(index: DisklessIndex, topic: str, partitions: int) -> None:
    """Rewrite the topic's record with `partitions` (more than it has)."""
    key = layout.topic_key(topic)
    try:
        doc = json.loads(index.store.get(key))
        if not isinstance(doc, dict):
            raise TypeError("not an object")
    except (ValueError, TypeError) as exc:
        raise ObjectStoreError(f"{topic}: unreadable diskless topic record ({exc})") from None
    doc["partitions"] = partitions
    index.store.put(key, json.dumps(doc).encode())
    mark_changed(index)


def mark_changed(index: DisklessIndex) -> None:
    """Tell the topic watches that a record changed (the marker gets a new etag)."""
    index.store.put(layout.TOPICS_CHANGED, uuid.uuid4().hex.encode())


def changed_mark(index: DisklessIndex) -> str | None:
    """The marker's etag (one HEAD); None when no gateway wrote it yet."""
    info = index.store.head(layout.TOPICS_CHANGED)
    return None if info is None else info.etag


def look(index: DisklessIndex, seen: dict) -> tuple[dict, set]:
    """One LIST of the topic records against `seen` (name -> (etag, home), updated): ({name:
    (partitions, home)} of the records new or changed since, names whose record went)."""
    listing = {info.key[len(layout.TOPICS):]: info.etag for info in index.store.list(layout.TOPICS)}
    changed = {}
    for name, etag in listing.items():
        if seen.get(name, (None,))[0] == etag:
            continue
        try:
            partitions, home = index.topic_record(name)
        except NotFound:  # deleted meanwhile
            continue
        changed[name] = (partitions, home)
        seen[name] = (etag, home)
    gone = {name for name in seen if name not in listing}
    for name in gone:
        del seen[name]
    return changed, gone
