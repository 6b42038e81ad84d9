"""Staged batches of open Kafka transactions on diskless queues (docs/diskless.md, "Transactions"):
each transactional batch is PUT here before its Produce is answered, so a committed transaction
keeps every record whatever happens to the gateway that took it (kill -9, restart).

    diskless/txn/<quoted transactional id>/<producer id>.<epoch>.<start ms>/<topic>/<queue>/<sequence>

One object per batch, its bytes verbatim, named by the batch's first sequence: a retried produce
PUTs the same key with the same bytes (idempotent). `<start ms>` tells the transactions of one
epoch apart (transactions v1 keeps the epoch). Blocking calls: run them in a worker thread."""
from __future__ import annotations

import urllib.parse

from store.objstore.api import NotFound, ObjectStore

STAGED = "diskless/txn/"
SEQ_DIGITS = 10  # zero-padded: a queue's batches list in sequence order


def txn_prefix(txn_id: str) -> str:
    return f"{STAGED}{urllib.parse.quote(txn_id, safe='')}/"


def prefix(txn_id: str, pid: int, epoch: int, started_ms: int) -> str:
    """Where the batches of one transaction (producer id, epoch, start) are staged."""
    return f"{txn_prefix(txn_id)}{pid}.{epoch}.{started_ms}/"


def key(where: str, topic: str, queue: int, sequence: int) -> str:
    return f"{where}{urllib.parse.quote(topic, safe='')}/{queue}/{sequence:0{SEQ_DIGITS}d}"


def stage(store: ObjectStore, where: str, topic: str, queue: int, sequence: int, data: bytes) -> None:
    store.put(key(where, topic, queue, sequence), data)


def load(store: ObjectStore, where: str) -> list[tuple[str, int, int, bytes]]:
    """(topic, queue, sequence, batch bytes) of every batch staged under `where`, in key order (one
    deleted between the LIST and its GET, by another gateway applying the same end, is left out)."""
    out = []
    for info in sorted(store.list(where), key=lambda i: i.key):
        topic, queue, seq = info.key[len(where):].split("/")
        try:
            out.append((urllib.parse.unquote(topic), int(queue), int(seq), store.get(info.key)))
        except NotFound:
            continue
    return out


def discard(store: ObjectStore, where: str) -> int:
    """Delete everything staged under `where` (a transaction ended); how many objects."""
    keys = [info.key for info in store.list(where)]
    for k in keys:
        store.delete(k)
    return len(keys)


# A transaction ends within Kafka's transaction.max.timeout.ms (15 min) of its start and its end is
# applied seconds later (retried EndTxn); staged batches of a start this old belong to no live one.
ABANDONED_AFTER_MS = 24 * 3600 * 1000


def sweep(store: ObjectStore, now_ms: int, older_than_ms: int = ABANDONED_AFTER_MS) -> int:
    """(the janitor) Delete staged batches of transactions that started more than `older_than_ms`
    ago: those of an end no gateway applied (its deletion failed and the gateway stopped, a wiped
    data dir, a cluster transaction past its timeout that no request ever aborted); how many."""
    gone = 0
    for info in store.list(STAGED):
        parts = info.key[len(STAGED):].split("/")
        try:
            started = int(parts[1].rsplit(".", 1)[1])
        except (IndexError, ValueError):
            continue
        if started < now_ms - older_than_ms:
            store.delete(info.key)
            gone += 1
    return gone
