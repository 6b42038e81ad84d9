"""The janitor's sweep of staged transactional batches (store/diskless/txn_staging.py), on the real
object store: staged batches of a transaction that started longer ago than any transaction can stay
open (and have its end applied) are deleted; a live transaction's stay."""
from __future__ import annotations

from store.diskless import txn_staging

HOUR_MS = 3600 * 1000


def test_sweep_deletes_only_abandoned_transactions_batches(object_store):
    now = 1_800_000_000_000
    old = txn_staging.prefix("tid/odd id", 7, 0, now - 25 * HOUR_MS)
    live = txn_staging.prefix("tid/odd id", 7, 1, now - HOUR_MS)
    for where in (old, live):
        txn_staging.stage(object_store, where, "t", 0, 0, b"batch-0")
        txn_staging.stage(object_store, where, "t", 1, 3, b"batch-3")
    txn_staging.stage(object_store, live, "t", 1, 3, b"batch-3")  # a retried produce: the same object
    assert txn_staging.sweep(object_store, now) == 2
    assert txn_staging.load(object_store, old) == []
    assert txn_staging.load(object_store, live) == [("t", 0, 0, b"batch-0"), ("t", 1, 3, b"batch-3")]
