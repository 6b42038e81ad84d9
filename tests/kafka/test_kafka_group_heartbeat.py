"""Classic-group Heartbeat answers while a rebalance is under way, as Kafka 4.x's group coordinator gives
them: the generation is checked first (a stale one is ILLEGAL_GENERATION in every state), then a group
preparing a rebalance answers REBALANCE_IN_PROGRESS to every member of the current generation; after the
JoinGroup round (awaiting SyncGroup) the new generation gets NONE. One documented difference: a member
already waiting in JoinGroup gets NONE from the gateway. Checked against a real Kafka 4.3 first."""
from __future__ import annotations

import threading

from kafka_target import REFERENCE, eventually, target  # noqa: F401 (fixture)
from test_kafka_group_fencing import HEARTBEAT, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, Member, _name, _topic

NONE = 0


def _in_background(fn) -> tuple[threading.Thread, list]:
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


def _beat(client, m: Member, generation: int) -> int:
    """A heartbeat for `m` sent on another connection (m's own waits in JoinGroup)."""
    return client.call(HEARTBEAT, 4, {"group_id": m.group, "generation_id": generation, "member_id": m.member_id,
                                      "group_instance_id": None})["error_code"]


def _settle(until, client, m: Member, generation: int) -> None:
    """Wait until the coordinator has the pending JoinGroup (the heartbeat says the group rebalances)."""
    for _ in range(100):
        if _beat(client, m, generation) == REBALANCE_IN_PROGRESS:
            return
        until.join(0.1)
    raise AssertionError("the group never started rebalancing")


def test_heartbeat_answers_during_a_rebalance(target):
    topic = _topic(target)
    group = _name("g")
    side = target.raw()
    a = Member(target, group, [topic])

    def joined():  # Kafka answers NOT_COORDINATOR until its offsets topic is loaded
        assert a.join()["error_code"] == NONE
    eventually(joined, timeout=30)
    assert a.sync({a.member_id: b""})["error_code"] == NONE
    b = Member(target, group, [topic])
    tb, _ = _in_background(b.join)  # waits: a has not rejoined
    _settle(tb, side, a, a.generation)
    assert _beat(side, a, a.generation) == REBALANCE_IN_PROGRESS
    assert _beat(side, a, a.generation + 5) == ILLEGAL_GENERATION  # the generation is checked first
    assert _beat(side, a, -1) == ILLEGAL_GENERATION
    ta, ra = _in_background(a.join)  # both rejoined: the round completes
    ta.join(30), tb.join(30)
    assert ra[0]["error_code"] == NONE and b.generation == a.generation == 2
    assert a.heartbeat() == NONE  # awaiting SyncGroup, the new generation
    assert _beat(side, a, 1) == ILLEGAL_GENERATION
    assert a.sync({a.member_id: b"", b.member_id: b""})["error_code"] == NONE
    assert b.sync()["error_code"] == NONE

    c = Member(target, group, [topic])
    tc, _ = _in_background(c.join)  # a new member: a and b must rejoin
    _settle(tc, side, a, a.generation)
    ta, _ = _in_background(a.join)  # a waits in JoinGroup for b
    for _ in range(20):  # a's JoinGroup reaches the coordinator
        ta.join(0.1)
    # A member already waiting in JoinGroup: Kafka checks its generation, then REBALANCE_IN_PROGRESS; the
    # gateway answers NONE (kafka-python churns otherwise: docs/mapping.md, tests/kafka/group_churn.py).
    assert _beat(side, a, 2) == (REBALANCE_IN_PROGRESS if REFERENCE else NONE)
    assert _beat(side, a, 1) == (ILLEGAL_GENERATION if REFERENCE else NONE)
    assert b.heartbeat() == REBALANCE_IN_PROGRESS
    tb, _ = _in_background(b.join)
    for t in (ta, tb, tc):
        t.join(30)
    assert a.generation == b.generation == c.generation == 3
