"""bench/txn_anomalies on small made-up histories: a clean one has no anomaly, and each of Jepsen's
classes is found where it is planted (so a run reporting zero is a real zero)."""
from __future__ import annotations

from bench.txn_anomalies import CLASSES, check


def txn(tid: str, outcome: str, writes: list, reads: list = ()) -> dict:
    return {"kind": "txn", "id": tid, "tid": tid.split("-")[0], "outcome": outcome, "error": "",
            "reads": [list(r) for r in reads], "writes": [list(w) for w in writes]}


def final(*records) -> dict:
    return {"kind": "poll", "reader": "final", "records": [list(r) for r in records]}


def found(history: list) -> dict:
    result = check(history)
    return {c: len(result[c]) for c in CLASSES if result[c]}


CLEAN = [
    txn("p0-0", "commit", [(0, 0, "p0-0-0"), (1, 0, "p0-0-1")]),
    txn("p1-0", "abort", [(0, 1, "p1-0-0")]),
    txn("p1-1", "commit", [(0, 3, "p1-1-0")], reads=[(0, 0, "p0-0-0")]),
    final((0, 0, "p0-0-0"), (1, 0, "p0-0-1"), (0, 3, "p1-1-0")),
]


def test_clean_history_has_no_anomaly():
    assert found(CLEAN) == {}


def test_lost_write_and_torn_transaction():
    history = CLEAN[:-1] + [final((0, 0, "p0-0-0"), (0, 3, "p1-1-0"))]  # p0-0's second value is gone
    assert found(history) == {"lost_write": 1, "torn_transaction": 1}


def test_aborted_read():
    history = CLEAN[:-1] + [final((0, 0, "p0-0-0"), (1, 0, "p0-0-1"), (0, 1, "p1-0-0"), (0, 3, "p1-1-0"))]
    assert found(history) == {"aborted_read": 1}


def test_duplicate_and_non_monotonic_poll():
    history = CLEAN[:-1] + [final((0, 0, "p0-0-0"), (1, 0, "p0-0-1"), (0, 3, "p1-1-0"), (0, 2, "p0-0-0"))]
    assert found(history) == {"duplicate": 1, "non_monotonic_poll": 1}


def test_inconsistent_offset():
    history = CLEAN + [{"kind": "poll", "reader": "other", "records": [[0, 3, "p0-0-1"]]}]
    assert found(history)["inconsistent_offset"] == 1


def test_g1c_cycle_through_offsets():
    """T1 read T2's value, yet T1's write precedes T2's in a partition: a write-read/write-write cycle."""
    history = [txn("p0-0", "commit", [(0, 0, "p0-0-0")], reads=[(1, 0, "p1-0-0")]),
               txn("p1-0", "commit", [(1, 0, "p1-0-0"), (0, 1, "p1-0-1")]),
               final((0, 0, "p0-0-0"), (0, 1, "p1-0-1"), (1, 0, "p1-0-0"))]
    assert found(history) == {"G1c": 1}


def test_write_cycle_is_g0_only():
    history = [txn("p0-0", "commit", [(0, 0, "p0-0-0"), (1, 1, "p0-0-1")]),
               txn("p1-0", "commit", [(1, 0, "p1-0-0"), (0, 1, "p1-0-1")]),
               final((0, 0, "p0-0-0"), (0, 1, "p1-0-1"), (1, 0, "p1-0-0"), (1, 1, "p0-0-1"))]
    result = check(history)
    assert len(result["G0"]) == 1 and not any(result[c] for c in CLASSES)


def test_unknown_outcome_counts_as_committed_once_read():
    history = [txn("p0-0", "unknown", [(0, 0, "p0-0-0"), (1, 0, "p0-0-1")]), final((0, 0, "p0-0-0"))]
    assert found(history) == {"lost_write": 1, "torn_transaction": 1}
    assert found([txn("p0-0", "unknown", [(0, 0, "p0-0-0")]), final()]) == {}
