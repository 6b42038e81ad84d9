"""Where the messages an IndexFile key names sit in one queue, read together with the queue's end
under the store's lock (an append publishes its ConsumeQueue and IndexFile entries in one locked
step, so no message can be in the queue and missing from the index at that moment). semantics.lite
uses it as the lite topic index: a lite subscription jumps to its next message instead of scanning."""
from __future__ import annotations

import time


def key_positions(store, topic: str, queue_id: int, key: str, limit: int = 4096):
    """([(queue offset, properties, store timestamp)] of the messages of (topic, queue_id) indexed
    under `key`, the queue's end offset), or None when the index holds `limit` or more entries for it."""
    with store._lock:
        end = store.max_offset(topic, queue_id)
        found = store.index.lookup(f"{topic}#{key}", 0, int(time.time() * 1000) + 1000, limit)
    if len(found) >= limit:
        return None
    hits = [m for m in map(store.get, found) if m is not None and m.topic == topic and m.queue_id == queue_id]
    return sorted((m.queue_offset, m.properties, m.store_timestamp) for m in hits), end
