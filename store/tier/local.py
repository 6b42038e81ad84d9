"""Local deletion with a tier: a sealed CommitLog file goes once its upload is committed and every
topic in it lets it go. A tiered topic lets it go when the file is older than its local.retention.ms
or its newer committed bytes reach local.retention.bytes (-2: use retention.ms / retention.bytes,
-1: no limit); an untiered topic (and the system topics) only past the store's file_reserved_hours,
as without a tier. Past file_reserved_hours a committed file goes whatever its topics say: it is
the disk's limit. An uncommitted file is never deleted (the store fills, and flow control follows).

An untiered topic whose live entries a layer above writes forward (`store.carry`: the POP log and
journals, semantics.pop_carry) does not pin a file once none of its entries there is still needed;
while one is and the file could otherwise go, it is asked to write them forward."""
from __future__ import annotations

import time

from store.retention import delete_before
from store.tier.upload import is_tiered

DEFAULT_RETENTION_MS = 72 * 3600 * 1000


def _number(attributes: dict, name: str, default: int) -> int:
    try:
        return int(attributes.get(name, default))
    except (TypeError, ValueError):
        return default


def local_limits(attributes: dict) -> tuple[int, int]:
    """(local retention ms, local retention bytes) in effect, -1 for none."""
    ms = _number(attributes, "local.retention.ms", -2)
    size = _number(attributes, "local.retention.bytes", -2)
    if ms == -2:
        ms = _number(attributes, "retention.ms", DEFAULT_RETENTION_MS)
    if size == -2:
        size = _number(attributes, "retention.bytes", -1)
    return ms, size


def _lets_go(store, topic: str, age_ms: int, newer_bytes: dict) -> bool:
    """A tiered topic's local retention lets a file of `age_ms` go."""
    cfg = store.topics.get(topic)
    ms, size = local_limits(cfg.attributes if cfg is not None else {})
    return (0 <= ms < age_ms) or (0 <= size <= newer_bytes.get(topic, 0))


def _carried(store, topic: str, start: int, age_ms: int, newer_bytes: dict, file_goes: bool) -> bool:
    """The untiered `topic` no longer needs its entries in the file at `start` (store.carry); while it
    does, it is asked to write them forward once the file could go: when the topic it follows lets
    the file go, or, following none, when the file's tiered topics do (`file_goes`)."""
    carry = store.carry
    needed = carry.needed_from(topic) if carry is not None else None
    if needed is None:
        return False
    end = start + store.commitlog.file_size
    if needed >= end:
        return True
    follows = carry.follows(topic)
    if follows is None:
        asked = file_goes
    else:
        cfg = store.topics.get(follows)
        asked = cfg is not None and is_tiered(cfg.attributes) and _lets_go(store, follows, age_ms, newer_bytes)
    if asked:
        carry.forward(topic, end)
    return False


def deletable(store, start: int, now_ms: int, newer_bytes: dict) -> bool:
    manifest = store.remote.manifests.get(start)
    if manifest is None:
        return False
    age_ms = now_ms - store.commitlog.mtime(start) * 1000
    if age_ms > store.config.file_reserved_hours * 3600_000:
        return True
    file_goes = all(_lets_go(store, topic, age_ms, newer_bytes) for topic in {ref.topic for ref in manifest.segments})
    untiered = [_carried(store, topic, start, age_ms, newer_bytes, file_goes) for topic in manifest.untiered]
    return file_goes and all(untiered)


def delete_uploaded(store, now_ms: int | None = None) -> int:
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms

    def find_cut():
        cl = store.commitlog
        newer: dict[str, int] = {}  # committed bytes of each topic in files after the one looked at
        for start in cl.starts[1:]:
            manifest = store.remote.manifests.get(start)
            for ref in manifest.segments if manifest else ():
                newer[ref.topic] = newer.get(ref.topic, 0) + ref.size
        cut = None
        for i, start in enumerate(cl.starts[:-1]):
            if not deletable(store, start, now_ms, newer):
                break
            cut = start + cl.file_size
            nxt = store.remote.manifests.get(cl.starts[i + 1])
            for ref in nxt.segments if nxt else ():
                newer[ref.topic] -= ref.size
        return cut

    deleted = delete_before(store.commitlog, store.consume_queues, store.index, store._lock, store._flusher, find_cut)
    if store.carry is not None:  # what find_cut asked to write forward, now that no lock is held
        store.carry.carry()
    if deleted:
        store.quarantine.forget_below(store.commitlog.begin)
    return deleted
