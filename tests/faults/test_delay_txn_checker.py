"""The rocketmq-delay-txn checker (tests/faults/rocketmq_delay_txn.check_delay_txn) on hand-made
histories: a rolled-back half delivered, a committed one or an acknowledged delayed one missing,
and a delayed one seen before its due time are each an anomaly; an early one while a clock jump held
on its storing gateway is counted, not an anomaly."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from rocketmq_delay_txn import TXN_BASE, check_delay_txn, decision  # noqa: E402

COMMIT, ROLLBACK, UNKNOWN_COMMIT, UNKNOWN_ROLLBACK = TXN_BASE, TXN_BASE + 1, TXN_BASE + 2, TXN_BASE + 3


def _ops(f: str, value: int, kind: str = "ok", at: float = 0.0, **extra) -> list[dict]:
    extra = {"level": 1 + value % 3, "broker": "broker-1", **extra} if f == "delay" else extra
    return [{"type": "invoke", "f": f, "value": value, "time": at, **extra},
            {"type": kind, "f": f, "value": value, "time": at + 0.1, **extra}]


def _history() -> list[dict]:
    ops = _ops("delay", 0) + _ops("delay", 1) + _ops("delay", 2, kind="info")
    for v in (COMMIT, ROLLBACK, UNKNOWN_COMMIT, UNKNOWN_ROLLBACK):
        ops += _ops("txn", v)
    return ops + _ops("txn", TXN_BASE + 5, kind="info")  # decided rollback; its half's send timed out


def _read(*values: int) -> list[dict]:
    return [{"partition": v % 3, "offset": i, "value": v} for i, v in enumerate(values)]


def test_the_decisions_cycle_through_commit_rollback_and_both_check_back_answers():
    assert [decision(v) for v in (COMMIT, ROLLBACK, UNKNOWN_COMMIT, UNKNOWN_ROLLBACK)] == \
        ["commit", "rollback", "unknown-commit", "unknown-rollback"]


def test_every_committed_and_delayed_value_read_and_no_rollback_is_valid():
    seen = {0: 1.5, 1: 6.0, COMMIT: 0.2, UNKNOWN_COMMIT: 9.0}  # level 1 = 1 s, level 2 = 5 s
    result = check_delay_txn(_history(), _read(0, 1, COMMIT, UNKNOWN_COMMIT, 0), seen)
    assert result["valid"], result
    assert result["redelivered"] == [0] and result["txn_ok_by_decision"]["unknown-rollback"] == 1


def test_a_rolled_back_half_delivered_is_an_anomaly_whatever_its_send_outcome():
    for rolled_back in (ROLLBACK, UNKNOWN_ROLLBACK, TXN_BASE + 5):
        result = check_delay_txn(_history(), _read(0, 1, COMMIT, UNKNOWN_COMMIT, rolled_back), {})
        assert not result["valid"] and result["rolled_back_read"] == [rolled_back], result
    seen_live_only = check_delay_txn(_history(), _read(0, 1, COMMIT, UNKNOWN_COMMIT), {ROLLBACK: 3.0})
    assert seen_live_only["rolled_back_read"] == [ROLLBACK]


def test_a_committed_or_acknowledged_delayed_value_missing_is_lost():
    result = check_delay_txn(_history(), _read(0, COMMIT), {})
    assert result["lost"] == [1, UNKNOWN_COMMIT] and not result["valid"]


def test_a_delayed_value_seen_before_its_due_time_is_early_unless_its_gateways_clock_jumped():
    seen = {1: 2.0}  # level 2 (5 s), invoked at 0
    result = check_delay_txn(_history(), _read(0, 1, COMMIT, UNKNOWN_COMMIT), seen)
    assert result["early"] == [1] and not result["valid"]
    jump = [{"fault": "clock-jump", "target": 1, "start": 1.0, "healed": 9.0}]
    excused = check_delay_txn(_history(), _read(0, 1, COMMIT, UNKNOWN_COMMIT), seen, jump)
    assert excused["valid"] and excused["early_clock"] == [1]
    elsewhere = [{**jump[0], "target": 2}]
    assert check_delay_txn(_history(), _read(0, 1, COMMIT, UNKNOWN_COMMIT), seen, elsewhere)["early"] == [1]
