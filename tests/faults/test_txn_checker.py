"""The txn workload's checker (tests/faults/txn.check_txns) on seed 74045's shape: an indeterminate
transaction read in part is `torn` (before: `aborted_read`, though the client never learnt its outcome),
an acknowledged abort read is `aborted_read`, an indeterminate one read whole or not at all is valid."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from txn import check_txns  # noqa: E402


def _op(txn: int, kind: str, f: str) -> list[dict]:
    values = [txn * 3 + p for p in range(3)]
    return [{"type": "invoke", "f": f, "value": txn, "values": values, "time": 0.0},
            {"type": kind, "f": f, "value": txn, "values": values, "time": 1.0}]


def _read(*values: int) -> tuple[list[dict], dict]:
    return [{"partition": v % 3, "offset": i, "value": v} for i, v in enumerate(values)], {}


def test_an_unknown_transaction_read_in_part_is_torn():
    result = check_txns(_op(305, "info", "commit"), _read(915))
    assert (result["torn"], result["aborted_read"], result["valid"]) == ([305], [], False)
    assert result["anomalous_reads"] == {"305": {"915": (0, 0), "916": None, "917": None}}


def test_an_acknowledged_abort_read_is_an_aborted_read():
    result = check_txns(_op(7, "ok", "abort"), _read(21))
    assert (result["aborted_read"], result["torn"], result["valid"]) == ([7], [], False)


def test_an_unknown_transaction_read_whole_or_not_at_all_is_valid():
    assert check_txns(_op(1, "info", "commit") + _op(2, "info", "abort"), _read(3, 4, 5))["valid"]
