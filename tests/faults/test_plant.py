"""`--plant-loss` (workload.check_queue) takes one acknowledged record out of the final read to show the
harness reports a loss. The record it takes must not hide a real anomaly: the subset test in `make test`
(test_faults_subset) judges the run by the read without it. On the old choice (the first acknowledged
record of the read) a value read twice lost one copy, and a record read before an earlier-sent one
took its reorder with it. And the subset's last check judges the whole read as the harness does: the
client's re-sends under a new epoch are not anomalies, a gateway's duplicate is, with its reads."""
from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(__file__))
import workload  # noqa: E402
from checker import check  # noqa: E402
from test_faults_subset import judged_with_plant  # noqa: E402


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


def _kept_run(tmp_path, copy_class: str) -> dict:
    """A finished run whose value 1 was stored twice (offsets 1 and 3) and classed `copy_class` by
    the harness's explainer; the plant is value 2, the last acknowledged record of partition 0."""
    history = [{"type": "invoke", "value": v, "partition": 0} for v in range(3)]
    history += [{"type": "ok", "value": v, "partition": 0} for v in range(3)]
    read = [{"partition": 0, "offset": o, "value": v} for o, v in enumerate([0, 1, 2, 1])]
    planted = read.pop(2)
    (tmp_path / "duplicates.json").write_text(json.dumps([{"value": 1, "class": copy_class, "copies": [], "sends": []}]))
    return {"history": history, "result": {"planted": planted, "final_read": read}}


def test_the_subset_judges_the_clients_resends_as_the_harness_does(tmp_path):
    queue = _kept_run(tmp_path, "client_resend")
    assert not check(queue["history"], queue["result"]["final_read"] + [queue["result"]["planted"]])["valid"]  # the old last line
    whole = judged_with_plant(str(tmp_path), queue)
    assert not any(whole["anomalies"].values()) and whole["client_resent"] == [1]


def test_the_subset_reports_a_gateways_duplicate_with_its_reads(tmp_path):
    whole = judged_with_plant(str(tmp_path), _kept_run(tmp_path, "gateway"))
    assert whole["anomalies"]["duplicated"] == [1] and whole["anomalies"]["reordered"] == [1]
    assert [r["offset"] for r in whole["reads"]] == [1, 3] and whole["client_resent"] == []
