"""The diskless workload's checks on hand-made index entries (tests/faults/diskless.py): the bucket's
index read as fencing evidence, and a value read twice classed from the index."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from diskless import check_index, explain_duplicates  # noqa: E402


def entry(seq: int, base: int, count: int, producers=()) -> dict:
    return {"seq": seq, "base": base, "count": count, "wal": f"w{seq}", "pos": 0, "size": 1,
            "producers": [list(p) for p in producers]}


def test_an_unbroken_index_is_not_fenced():
    entries = {0: [entry(0, 0, 3, [(1000, 0, 0, 3, 0)]), entry(1, 3, 2, [(1000, 0, 3, 2, 0)])],
               1: [entry(0, 0, 1)]}
    assert check_index(entries) == {"index_entries": 3, "fenced": []}


def test_a_gap_an_overlap_and_a_batch_committed_twice_are_each_fenced():
    entries = {0: [entry(0, 0, 3, [(1000, 0, 0, 3, 0)]),
                   entry(1, 2, 3, [(1000, 0, 0, 3, 0)]),  # starts inside slot 0, and the same batch again
                   entry(3, 5, 1)]}  # slot 2 missing
    fenced = check_index(entries)["fenced"]
    assert len(fenced) == 3, fenced
    assert any("starts at 2" in f for f in fenced)
    assert any("slots 0 and 1" in f for f in fenced)
    assert any("slot 3 follows slot 1" in f for f in fenced)


def test_copies_under_two_epochs_are_the_clients_resend_and_under_one_the_gateways():
    entries = {0: [entry(0, 0, 2, [(1000, 0, 0, 2, 0)]),
                   entry(1, 2, 2, [(1000, 1, 0, 1, 0), (1000, 0, 2, 1, 1)])]}
    final = [{"partition": 0, "offset": o, "value": v} for o, v in enumerate([7, 8, 7, 8])]
    explained = {e["value"]: e for e in explain_duplicates(entries, final, [7, 8])}
    assert explained[7]["class"] == "client_resend"  # offsets 0 (epoch 0) and 2 (epoch 1)
    assert [c["batch"] for c in explained[7]["copies"]] == [(1000, 0, 0), (1000, 1, 0)]
    assert explained[8]["class"] == "gateway"  # offsets 1 and 3: both epoch 0
