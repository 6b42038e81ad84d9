"""semantics.schema_validation on a gateway whose copy of `_schemas` lacks an id (a cluster member
without a replica): the id is asked of the registry leader once (`fetch_ids`), then judged from what
the leader told; known ids never ask; an id the leader does not know is refused and not asked again
at once; a refusal is counted once even when the remoting path judges a send twice; what the leader
told is asked again after REMOTE_TTL_S."""
from __future__ import annotations

import trio

from semantics.schema_registry.state import Schema
from semantics.schema_validation import rule_of
from test_sr_validation_frames import AVRO, _validation

RULE = rule_of({"confluent.value.schema.validation": "true"})


def _head(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big")


class Leader:
    """A stub registry leader: id 2 is registered under t-value, nothing else is known."""

    def __init__(self, fails: bool = False) -> None:
        self.asked: list[list[int]] = []
        self.fails = fails
        self.deleted = False  # t-value soft-deleted: id 2 has no live subject

    async def __call__(self, ids):
        self.asked.append(list(ids))
        if self.fails:
            raise OSError("leader unreachable")
        subjects = frozenset() if self.deleted else frozenset({"t-value"})
        return {i: (Schema(2, AVRO), subjects) if i == 2 else None for i in ids}


def test_an_unknown_id_is_asked_once_then_judged_from_memory():
    validation, leader = _validation(AVRO), Leader()
    validation.fetch_ids = leader

    async def main():
        heads = [_head(1), _head(2), _head(2)]
        assert await validation.refusals_learning("kafka", "t", RULE, None, heads) == []
        assert leader.asked == [[2]]  # id 1 is in this gateway's copy: never asked
        assert await validation.refusals_learning("kafka", "t", RULE, None, heads) == []
        assert leader.asked == [[2]]  # learnt: not asked again
        refused = await validation.refusals_learning("kafka", "other", RULE, None, [_head(2)])
        assert refused == [(0, "value schema id 2 is not registered under subject other-value")]
    trio.run(main)


def test_an_id_the_leader_does_not_know_is_refused_and_not_asked_again_at_once():
    validation, leader = _validation(AVRO), Leader()
    validation.fetch_ids = leader

    async def main():
        for _ in range(3):
            refused = await validation.refusals_learning("kafka", "t", RULE, None, [_head(9)])
            assert refused == [(0, "value schema id 9 is not registered")]
        assert leader.asked == [[9]]
        assert validation.refused[("kafka", "t", "value")] == 3
    trio.run(main)


def test_the_sync_path_is_provisional_until_learn():
    validation, leader = _validation(AVRO), Leader()
    validation.fetch_ids = leader

    async def main():
        assert validation.body_refusal("remoting", _cfg(), [_head(2) + b"x"]) is not None
        assert validation.pending and validation.refused == {}  # not counted: the leader may know it
        await validation.learn()
        assert validation.body_refusal("remoting", _cfg(), [_head(2) + b"x"]) is None
        assert "not registered" in validation.body_refusal("remoting", _cfg(), [_head(9) + b"x"])
        await validation.learn()
        assert "not registered" in validation.body_refusal("remoting", _cfg(), [_head(9) + b"x"])
        assert not validation.pending and validation.refused == {("remoting", "t", "value"): 1}
    trio.run(main)


def test_the_grpc_path_learns_before_it_answers():
    validation, leader = _validation(AVRO), Leader()
    validation.fetch_ids = leader

    async def main():
        assert await validation.body_refusal_learning("grpc", _cfg(), [_head(2) + b"x"]) is None
        refused = await validation.body_refusal_learning("grpc", _cfg(), [_head(2) + b"x", _head(9) + b"x"])
        assert refused.endswith("refused 1 of 2 message(s); message 1: value schema id 9 is not registered")
        assert leader.asked == [[2], [9]] and validation.refused == {("grpc", "t", "value"): 1}
    trio.run(main)


def test_an_unreachable_leader_refuses_and_never_raises():
    validation = _validation(AVRO)
    validation.fetch_ids = Leader(fails=True)
    refused = trio.run(validation.refusals_learning, "grpc", "t", RULE, None, [_head(2)])
    assert refused == [(0, "value schema id 2 is not registered")]


def _cfg():
    import types
    return types.SimpleNamespace(name="t", attributes={"confluent.value.schema.validation": "true"})


def test_what_the_leader_told_is_asked_again_after_its_ttl(monkeypatch):
    """A subject deleted at the leader after this gateway learnt its id: refused once REMOTE_TTL_S has
    passed (the leader asked again); an unreachable leader leaves the last answer in force."""
    import semantics.schema_validation as sv
    clock = [1000.0]
    monkeypatch.setattr(sv.time, "monotonic", lambda: clock[0])
    validation, leader = _validation(AVRO), Leader()
    validation.fetch_ids = leader

    async def main():
        assert await validation.refusals_learning("kafka", "t", RULE, None, [_head(2)]) == []
        clock[0] += sv.REMOTE_TTL_S / 2
        assert await validation.refusals_learning("kafka", "t", RULE, None, [_head(2)]) == []
        assert leader.asked == [[2]]  # not due yet
        clock[0] += sv.REMOTE_TTL_S
        leader.fails = True
        assert await validation.refusals_learning("kafka", "t", RULE, None, [_head(2)]) == []
        assert leader.asked == [[2], [2]]  # asked again; unreachable: the last answer stands
        clock[0] += sv.REMOTE_TTL_S
        leader.fails = False
        leader.deleted = True
        refused = await validation.refusals_learning("kafka", "t", RULE, None, [_head(2)])
        assert refused == [(0, "value schema id 2 is not registered under subject t-value")]
        assert leader.asked == [[2], [2], [2]]
    trio.run(main)
