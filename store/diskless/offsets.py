"""Consumer groups' committed offsets of diskless queues, kept in the bucket too (docs/diskless.md,
"Where each semantic's state lives"): one small object per (group, topic, queue), overwritten by each
commit, read back at start by a gateway whose offset table lacks them (a wiped data dir, a new
gateway). Blocking: call from worker threads.

    diskless/offsets/<group, percent-encoded>/<topic>/<queue>    {"offset", "epoch", "metadata"}"""
from __future__ import annotations

import json
import urllib.parse

from store.objstore.api import NotFound, ObjectStore, ObjectStoreError

OFFSETS = "diskless/offsets/"


def offset_key(group: str, topic: str, queue: int) -> str:
    return f"{OFFSETS}{urllib.parse.quote(group, safe='')}/{topic}/{queue}"


def save(store: ObjectStore, group: str, commits: list[tuple[str, int, int, int, str]]) -> None:
    """Write each committed (topic, queue, offset, leader epoch, metadata) of `group`."""
    for topic, queue, offset, epoch, metadata in commits:
        doc = {"offset": offset, "epoch": epoch, "metadata": metadata}
        store.put(offset_key(group, topic, queue), json.dumps(doc).encode())


def load_all(store: ObjectStore):
    """(group, topic, queue, offset, leader epoch, metadata) of every offset in the bucket."""
    for info in store.list(OFFSETS):
        parts = info.key[len(OFFSETS):].split("/")
        if len(parts) != 3 or not parts[2].isdigit():
            continue
        try:
            doc = json.loads(store.get(info.key))
            yield (urllib.parse.unquote(parts[0]), parts[1], int(parts[2]), int(doc["offset"]),
                   int(doc.get("epoch", -1)), str(doc.get("metadata", "")))
        except NotFound:
            continue
        except (ValueError, TypeError, KeyError) as exc:
            raise ObjectStoreError(f"{info.key}: unreadable diskless group offset ({exc})") from None


def delete_topic(store: ObjectStore, topic: str) -> None:
    """Delete every group's offsets of `topic` (the topic was deleted)."""
    for info in store.list(OFFSETS):
        parts = info.key[len(OFFSETS):].split("/")
        if len(parts) == 3 and parts[1] == topic:
            store.delete(info.key)
