"""The fault harness's checker on hand-made histories (the harness itself runs with `make faults`)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from checker import check  # noqa: E402


def _history(*sends):
    """sends: (value, partition, outcome)."""
    ops = [{"type": "invoke", "value": v, "partition": p} for v, p, _ in sends]
    return ops + [{"type": outcome, "value": v, "partition": p} for v, p, outcome in sends]


def _read(*records):
    return [{"partition": p, "offset": o, "value": v} for o, (v, p) in enumerate(records)]


def test_a_clean_history_is_valid():
    result = check(_history((1, 0, "ok"), (2, 1, "ok"), (3, 0, "info")), _read((1, 0), (2, 1), (3, 0)))
    assert result["valid"] and result["ok"] == 2 and result["info"] == 1


def test_a_lost_acknowledged_write_fails():
    result = check(_history((1, 0, "ok"), (2, 0, "ok")), _read((1, 0)))
    assert not result["valid"] and result["lost"] == [2]


def test_an_indeterminate_write_may_be_missing():
    assert check(_history((1, 0, "ok"), (2, 0, "info"), (3, 0, "fail")), _read((1, 0)))["valid"]


def test_a_duplicate_fails():
    result = check(_history((1, 0, "ok"), (2, 0, "ok")), _read((1, 0), (2, 0), (2, 0)))
    assert not result["valid"] and result["duplicated"] == [2]


def test_acknowledged_values_out_of_send_order_in_a_partition_fail():
    result = check(_history((1, 0, "ok"), (2, 0, "ok")), _read((2, 0), (1, 0)))
    assert not result["valid"] and result["reordered"] == [1]


def test_a_value_never_sent_fails():
    result = check(_history((1, 0, "ok")), _read((1, 0), (9, 0)))
    assert not result["valid"] and result["unexpected"] == [9]
