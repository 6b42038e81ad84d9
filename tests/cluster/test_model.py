"""cluster.model: placement across members, rendezvous hashing of coordinators, leader election."""
from __future__ import annotations

import collections

import pytest

from cluster.model import Member, QueueAssignment, TopicRecord, coordinator_of, elect, parse_queue_key, place, queue_key


def test_place_spreads_leaders_and_replicas_on_distinct_members():
    out = place("orders", 6, [3, 1, 2], 2)
    leaders = collections.Counter(a.leader for a in out)
    assert leaders == {1: 2, 2: 2, 3: 2}
    for a in out:
        assert a.replicas[0] == a.leader and len(set(a.replicas)) == 2 and a.isr == a.replicas and a.epoch == 0


def test_place_caps_replication_and_needs_a_member():
    assert all(len(a.replicas) == 2 for a in place("t", 3, [1, 2], 5))
    with pytest.raises(ValueError):
        place("t", 1, [], 1)


def test_place_with_a_leader_gives_it_every_queue_and_the_replicas_to_the_next_members():
    """A LITE or PRIORITY topic (gateway.cluster.ownership.led_whole) is led whole by one member."""
    out = place("lite-parent", 4, [3, 1, 2], 2, leader=2)
    assert [(a.leader, a.replicas) for a in out] == [(2, (2, 3))] * 4
    assert [a.leader for a in place("t", 4, [1, 2], 1, leader=9)] != [9] * 4  # not a live member: spread


def test_coordinator_is_stable_and_moves_only_the_leavers_keys():
    keys = [f"group-{i}" for i in range(300)]
    before = {k: coordinator_of(k, [1, 2, 3]) for k in keys}
    assert set(before.values()) == {1, 2, 3}
    after = {k: coordinator_of(k, [1, 2]) for k in keys}
    moved = [k for k in keys if before[k] != after[k]]
    assert moved and all(before[k] == 3 for k in moved)
    assert coordinator_of("g", []) is None


def test_elect_picks_a_live_in_sync_replica_and_bumps_the_epoch():
    a = QueueAssignment(1, (1, 2, 3), (1, 3), 4)
    assert elect(a, {2, 3}) == QueueAssignment(3, (1, 2, 3), (3,), 5)
    assert elect(a, {2}) is None  # 2 is not in sync


def test_json_round_trips():
    m = Member(2, "h", 9092, 9876)
    assert Member.from_json(m.to_json()) == m and m.remoting_addr == "h:9876"
    a = QueueAssignment(1, (1, 2), (1,), 3)
    assert QueueAssignment.from_json(a.to_json()) == a
    r = TopicRecord(4, 6, {"x": "1"})
    assert TopicRecord.from_json(r.to_json()) == r
    assert parse_queue_key(queue_key("a/b", 7)) == ("a/b", 7)
