"""`--plant-loss` (workload.check_queue) takes one acknowledged record out of the final read to show the
harness reports a loss. The record it takes must not hide a real anomaly: the subset test in `make test`
(test_faults_subset) judges the run by the read without it. On the old choice (the first acknowledged
record of the read) a value read twice lost one copy, and a record read before an earlier-sent one
took its reorder with it."""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(__file__))
import workload  # noqa: E402


def _run(monkeypatch, values_read: list[int], acked=range(6)) -> dict:
    """Every value to partition 0, read back in the order given (offsets 0, 1, ...)."""
    history = [{"type": "invoke", "value": v, "partition": 0} for v in range(6)]
    history += [{"type": "ok" if v in acked else "info", "value": v, "partition": 0} for v in range(6)]
    read = [{"partition": 0, "offset": o, "value": v} for o, v in enumerate(values_read)]
    monkeypatch.setattr(workload, "read_all", lambda *_: list(read))
    load = SimpleNamespace(bootstrap="unused", topic="faults", partitions=1, history=history, fatal=None)
    return workload.check_queue(load, plant_loss=True)


def test_on_a_clean_read_the_plant_is_the_only_anomaly(monkeypatch):
    result = _run(monkeypatch, [0, 1, 2, 3, 4, 5])
    assert result["planted"] == {"partition": 0, "offset": 5, "value": 5}
    assert result["lost"] == [5] and not (result["duplicated"] or result["reordered"] or result["unexpected"])
    assert result["unplanted"] == {"lost": [], "duplicated": [], "reordered": [], "unexpected": []}


def test_the_plant_is_never_one_copy_of_a_value_read_twice(monkeypatch):
    result = _run(monkeypatch, [0, 1, 0, 2, 3, 4, 5])  # 0 stored again after 1 (a re-send, or a gateway's)
    assert result["duplicated"] == [0] and result["reordered"] == [0]
    assert result["planted"]["value"] == 5 and result["lost"] == [5]


def test_the_plant_never_takes_away_the_reorder_of_a_record_after_it(monkeypatch):
    result = _run(monkeypatch, [1, 0, 2, 3, 4, 5])  # 0 was sent before 1, stored after it
    assert result["reordered"] == [0] and result["lost"] == [5]


def test_the_last_acknowledged_record_is_planted_even_when_unacknowledged_ones_follow(monkeypatch):
    result = _run(monkeypatch, [0, 1, 2, 3, 4, 5], acked={0, 1, 2, 3})
    assert result["planted"]["value"] == 3 and result["lost"] == [3] and result["valid"] is False
    assert not (result["duplicated"] or result["reordered"])
