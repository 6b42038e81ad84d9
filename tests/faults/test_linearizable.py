"""The metadata linearizability checker (tests/faults/lincheck, porcupine) on hand-made histories: each
model accepts a linearizable history and rejects one that is not (the harness itself: `make faults`).
Needs Go (`make setup`); the checker is built once into ~/.cache/rocketgate/lincheck."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from linearizable import check_linearizable  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="the checker is built with Go (make setup)")


def _op(key, kind, call, ret, client=1, **fields):
    return {"client": client, "key": key, "kind": kind, "call": call, "return": ret, **fields}


def test_a_topic_missing_after_its_create_was_acknowledged_is_not_linearizable():
    create = _op("topic/a", "create", 0, 1, client=0, result="created")
    history = [create, _op("topic/a", "exists", 0.5, 0.6, result="missing"),  # concurrent with the create: fine
               _op("topic/a", "exists", 2, 3, result="exists")]
    assert check_linearizable(history)["valid"]
    stale = history + [_op("topic/a", "exists", 4, 5, client=2, result="missing")]
    assert check_linearizable(stale)["illegal"] == ["topic/a"]


def test_one_gateways_own_answers_may_show_a_topic_created_elsewhere_but_never_lose_it():
    seen = [_op("topic/c@g2", "observe", 0, 1, client=2, result="missing"),
            _op("topic/c@g2", "observe", 2, 3, client=2, result="exists")]
    assert check_linearizable(seen)["valid"]
    assert not check_linearizable(seen + [_op("topic/c@g2", "observe", 4, 5, client=2, result="missing")])["valid"]


def test_an_unanswered_create_may_take_effect_late_or_never():
    create = _op("topic/b", "create", 0, None, client=0, result="unknown")
    assert check_linearizable([create, _op("topic/b", "exists", 2, 3, result="missing"),
                               _op("topic/b", "exists", 4, 5, client=2, result="exists")])["valid"]
    # but once seen, it stays
    assert not check_linearizable([create, _op("topic/b", "exists", 2, 3, result="exists"),
                                   _op("topic/b", "exists", 4, 5, client=2, result="missing")])["valid"]


def test_a_leader_epoch_going_back_or_two_leaders_in_one_epoch_is_not_linearizable():
    key = "leader/t/0"
    ok = [_op(key, "leader", 0, 1, leader=1, epoch=0), _op(key, "leader", 0.5, 3, client=2, leader=2, epoch=1),
          _op(key, "leader", 2, 2.5, client=3, leader=1, epoch=0),  # concurrent with the epoch-1 read: fine
          _op(key, "leader", 4, 5, leader=2, epoch=1)]
    assert check_linearizable(ok)["valid"]
    assert not check_linearizable(ok + [_op(key, "leader", 6, 7, client=3, leader=1, epoch=0)])["valid"]
    assert not check_linearizable(ok + [_op(key, "leader", 6, 7, client=3, leader=3, epoch=1)])["valid"]


def test_a_committed_offset_read_back_older_after_a_coordinator_move_is_not_linearizable():
    key = "offsets/g/0"
    writes = [_op(key, "write", 0, 1, client=0, value=1, result="ok"), _op(key, "write", 2, 3, client=0, value=2, result="ok")]
    assert check_linearizable(writes + [_op(key, "read", 4, 5, client=2, value=2)])["valid"]
    assert check_linearizable(writes + [_op(key, "read", 4, 5, client=2, value=-1)])["illegal"] == [key]
    # a refused commit never shows; an unanswered one may
    refused = [_op(key, "write", 6, 7, client=0, value=3, result="failed")]
    assert not check_linearizable(writes + refused + [_op(key, "read", 8, 9, client=2, value=3)])["valid"]
    unanswered = [_op(key, "write", 6, None, client=0, value=3, result="unknown")]
    assert check_linearizable(writes + unanswered + [_op(key, "read", 8, 9, client=2, value=3)])["valid"]
