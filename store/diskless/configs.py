"""Retention configs of diskless topics, kept in the bucket so that a change made through one gateway
reaches every gateway sharing it (docs/diskless.md, "Retention changes"). Each change is a new
version, written once with a conditional create, as index entries are: of two gateways changing a
topic at once, one wins the version and the other adopts it. Blocking: call from worker threads.

    diskless/configs/<topic>/<version:012d>    {"retention.ms": "..." | null, "retention.bytes": ...}"""
from __future__ import annotations

import json

from store.objstore.api import ObjectStore, ObjectStoreError, PreconditionFailed

CONFIGS = "diskless/configs/"
KEYS = ("retention.ms", "retention.bytes")


def version_key(topic: str, version: int) -> str:
    return f"{CONFIGS}{topic}/{version:012d}"


def latest(store: ObjectStore, topic: str) -> tuple[int, dict | None]:
    """(version, configs) of the topic's newest version; (0, None) when none was written."""
    prefix = f"{CONFIGS}{topic}/"
    versions = [int(v) for v in (info.key[len(prefix):] for info in store.list(prefix)) if v.isdigit()]
    if not versions:
        return 0, None
    top = max(versions)
    try:
        doc = json.loads(store.get(version_key(topic, top)))
    except ValueError as exc:
        raise ObjectStoreError(f"{version_key(topic, top)}: unreadable diskless topic configs ({exc})") from None
    return top, {k: (None if doc.get(k) is None else str(doc[k])) for k in KEYS}


def publish(store: ObjectStore, topic: str, version: int, configs: dict) -> bool:
    """Write `configs` as the topic's `version`; False when another writer took that version first."""
    try:
        store.put(version_key(topic, version), json.dumps({k: configs.get(k) for k in KEYS}).encode(),
                  if_absent=True)
    except PreconditionFailed:
        return False
    return True


def delete_topic(store: ObjectStore, topic: str) -> None:
    """Delete every version of `topic`'s configs (the topic was deleted: one created again under the
    name must not adopt the old retention)."""
    for info in store.list(f"{CONFIGS}{topic}/"):
        store.delete(info.key)
