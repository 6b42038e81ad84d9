"""Disk loss: a store opened on an empty data dir with a tier that holds data starts where the tier
ends. The topic table comes back from meta/topics.json, the consumer offsets from
meta/consumerOffset.json, every tiered queue continues at its remote
end (so new offsets never collide with tiered ones) and the CommitLog at the end of the last
committed file (so CommitLog offsets, and msgIds, stay unique). What was never uploaded is gone
unless replicas hold it."""
from __future__ import annotations

import json
import logging

from store.objstore.api import NotFound
from store.tier.manifest import OFFSETS_FILE, OFFSETS_KEY, TOPICS_KEY

log = logging.getLogger("rocketgate.tier")


def restore_if_empty(store) -> bool:
    cl = store.commitlog
    end = store.remote.committed_end
    if cl.starts or cl.end or end == 0:
        return False
    cl.end = cl.synced = end
    store._replay_from = (end, end)  # nothing local to replay: the CommitLog begins at the tier's end
    try:
        table = json.loads(store.objects.get(TOPICS_KEY))
    except NotFound:
        table = {}
    for name, t in (table or {}).items():
        if name not in store.topics:
            store.topics.create(name, int(t.get("readQueueNums", 8)), int(t.get("writeQueueNums", 8)),
                                int(t.get("perm", 6)), dict(t.get("attributes") or {}))
    try:
        store.write_config(OFFSETS_FILE, json.loads(store.objects.get(OFFSETS_KEY)))
    except NotFound:  # written by a gateway before offsets were tiered
        pass
    log.warning("tier: empty data dir: restored %d topics and the consumer offsets from the tier; the "
                "CommitLog continues at %d", len(table or {}), end)
    return True


def align_queues(store) -> int:
    """Make every tiered queue that holds no local units continue at its remote end (after a disk
    loss, and after each restart until the queue gets a new entry); returns how many moved."""
    moved = 0
    for topic in store.remote.topics():
        for qid in store.remote.queues_of(topic):
            end = store.remote.end(topic, qid)
            cq = store.consume_queues.create((topic, qid))
            if cq.min_offset == cq.max_offset < end:
                cq.start_at(end)
                moved += 1
    return moved
