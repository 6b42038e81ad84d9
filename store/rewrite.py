"""The store call compaction needs: a rewritten run of a queue (docs/internals.md, "Compaction")."""
from __future__ import annotations

from codec.remoting import message as M
from store.api import AppendResult, StoreError
from store.dispatch import REWRITE
from store.space import guard_space


def rewrite(store, topic: str, queue_id: int, start: int, end: int, body: bytes) -> AppendResult:
    """Compaction: `body` (one batch of the run's surviving records) now serves offsets
    [start, end) of the queue: appended like any entry, then the run's ConsumeQueue units point at it
    (docs/internals.md, "Compaction")."""
    msg = M.Message(topic, queue_id, body, sys_flag=M.INNER_BATCH_FLAG, batch_count=end - start,
                    properties={REWRITE: "1"})
    with store._write_lock, store._lock:  # no other append between its prepare and publish
        cq = store.consume_queues.queues.get((topic, queue_id))
        if store._flusher.closed or cq is None or not cq.min_offset <= start < end <= cq.max_offset:
            raise StoreError(f"no offsets [{start}, {end}) in {topic}-{queue_id} to rewrite")
        store.space.check(store.commitlog.end)
        results, requests = guard_space(store.space, store.commitlog.append, (msg,), lambda _key: start)
        store._builtin[0].rewrite(requests[0])
    return results[0]
