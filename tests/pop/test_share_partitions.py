"""KIP-932 share groups on the pop engine, below the wire: assignment, session epochs, acknowledgement
rules, the delivery limit, restart, admin resets, and the progress a share group shares with a
RocketMQ POP group of the same name."""
from __future__ import annotations

import pytest
import trio

import store
from pop_env import Clock, open_store
from semantics.offsets import OffsetTable
from semantics.pop import PopEngine, Receipt
from semantics.share_groups import Member, ShareGroups, assign
from semantics.share_partitions import (ACCEPT, GAP, INVALID_RECORD_STATE, INVALID_REQUEST, NONE, REJECT,
                                        RELEASE, RENEW, SharePartitions)
from semantics.share_sessions import (INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED, SHARE_SESSION_NOT_FOUND,
                                      ShareSessions)

G, T = "sg", "T"
LOCK = 30_000


def make(s, clock):
    groups = ShareGroups(lambda t: 1, s)
    engine = PopEngine(s, OffsetTable(s), clock=clock)
    return engine, SharePartitions(engine, groups)


@pytest.fixture
def env(tmp_path):
    s = open_store(tmp_path)
    s.topics.create(T, read_queues=1, write_queues=1)
    for i in range(10):
        s.append(store.Message(topic=T, queue_id=0, body=b"m%d" % i))
    clock = Clock()
    engine, shares = make(s, clock)
    shares.groups.alter_configs(G, [("share.auto.offset.reset", 0, "earliest")], False)
    yield s, clock, engine, shares
    s.close()


def batch(first, last, *types):
    return {"first_offset": first, "last_offset": last, "acknowledge_types": list(types)}


def offsets(acquired):
    return [d.offset for d in acquired.deliveries]


def test_assignment_spreads_partitions_and_gives_all_when_members_outnumber_them():
    members = [Member(f"m{i}", None, "c", "h", ["a", "b"]) for i in range(3)]
    spread = assign(members, {"a": 6})
    assert {m: ps["a"] for m, ps in spread.items()} == {"m0": [0, 3], "m1": [1, 4], "m2": [2, 5]}
    everyone = assign(members, {"a": 2, "b": 3})
    assert all(a == {"a": [0, 1], "b": [0, 1, 2]} for a in everyone.values())


def test_heartbeat_joins_assigns_and_leaves():
    async def main():
        groups = ShareGroups(lambda t: 2)
        first = groups.heartbeat({"group_id": G, "member_id": "a", "member_epoch": 0,
                                  "subscribed_topic_names": [T]}, "c", "/h")
        assert first["error_code"] == NONE and first["assignment"] == {}  # the topic is being initialized
        assigned = groups.heartbeat({"group_id": G, "member_id": "a", "member_epoch": first["member_epoch"],
                                     "subscribed_topic_names": None}, "c", "/h")
        assert assigned["assignment"] == {T: [0, 1]} and assigned["member_epoch"] > first["member_epoch"]
        again = groups.heartbeat({"group_id": G, "member_id": "a", "member_epoch": assigned["member_epoch"],
                                  "subscribed_topic_names": None}, "c", "/h")
        assert again["assignment"] is None  # unchanged: not sent again
        groups.heartbeat({"group_id": G, "member_id": "b", "member_epoch": 0, "subscribed_topic_names": [T]}, "c", "/h")
        both = groups.heartbeat({"group_id": G, "member_id": "a", "member_epoch": again["member_epoch"],
                                 "subscribed_topic_names": None}, "c", "/h")
        assert both["assignment"] == {T: [0, 1]}  # 2 members, 2 partitions: everyone gets everything
        unknown = groups.heartbeat({"group_id": G, "member_id": "z", "member_epoch": 3,
                                    "subscribed_topic_names": None}, "c", "/h")
        assert unknown["error_code"] == 25
        groups.heartbeat({"group_id": G, "member_id": "a", "member_epoch": -1, "subscribed_topic_names": None},
                         "c", "/h")
        assert set(groups.groups[G].members) == {"b"}
    trio.run(main)


def test_members_joining_together_split_a_new_topic():
    """As on Kafka 4.3.1 (librdkafka's 0172 mixed-ack-mode sub-test): a topic new to the group is
    assigned from the heartbeat after the one that subscribed it, so the first member does not get
    (and fetch) every partition before the second has joined."""
    async def main():
        groups = ShareGroups(lambda t: 4)

        def beat(member, epoch, topics=None):
            return groups.heartbeat({"group_id": G, "member_id": member, "member_epoch": epoch,
                                     "subscribed_topic_names": topics}, "c", "/h")
        a = beat("a", 0, [T])
        assert a["assignment"] == {}  # the topic is being initialized
        assert beat("b", 0, [T])["assignment"] == {T: [1, 3]}  # initialized by now
        assert beat("a", a["member_epoch"])["assignment"] == {T: [0, 2]}
        c = beat("c", 0, [T])  # a later member of the initialized topic gets its share at once
        assert c["assignment"] == {T: [2]}
    trio.run(main)


def test_sessions_beyond_the_limit_are_refused_not_evicted():
    """As Kafka 4.3.1 with group.share.max.share.sessions=2: the third session is refused (133) and
    opens once another has closed; a member reopening its own session is no new one."""
    sessions = ShareSessions(max_sessions=2)
    assert sessions.fetch(G, "a", 0, [], [])[0] == NONE and sessions.fetch(G, "b", 0, [], [])[0] == NONE
    assert sessions.fetch(G, "c", 0, [], [])[0] == SHARE_SESSION_LIMIT_REACHED
    assert sessions.fetch(G, "a", 1, [], [])[0] == NONE  # not evicted
    assert sessions.fetch(G, "b", 0, [], [])[0] == NONE  # replaced
    assert sessions.fetch(G, "a", -1, [], [], may_open=False)[0] == NONE
    assert sessions.fetch(G, "c", 0, [], [])[0] == NONE


def test_session_epochs():
    sessions = ShareSessions()
    assert sessions.fetch(G, "m", 1, [], [])[0] == SHARE_SESSION_NOT_FOUND
    code, session = sessions.fetch(G, "m", 0, [(T, 0)], [])
    assert code == NONE and list(session.partitions) == [(T, 0)]
    assert sessions.fetch(G, "m", 2, [(T, 1)], [])[0] == INVALID_SHARE_SESSION_EPOCH
    assert list(session.partitions) == [(T, 0)]  # the refused request changed nothing
    assert sessions.fetch(G, "m", 1, [(T, 1)], [(T, 0)])[0] == NONE
    assert list(session.partitions) == [(T, 1)]
    assert sessions.fetch(G, "m", 2, [], [], may_open=False)[0] == NONE
    assert sessions.fetch(G, "m", 0, [], [], may_open=False)[0] == INVALID_SHARE_SESSION_EPOCH
    assert sessions.fetch(G, "m", -1, [], [])[0] == NONE
    assert sessions.fetch(G, "m", 3, [], [])[0] == SHARE_SESSION_NOT_FOUND


def test_acknowledge_types(env):
    s, clock, engine, shares = env
    assert offsets(shares.acquire(G, "a", T, 0, 5)) == [0, 1, 2, 3, 4]
    code, _ = shares.acknowledge(G, "a", T, 0, [batch(0, 1, ACCEPT), batch(2, 4, RELEASE, REJECT, RENEW)])
    assert code == NONE
    again = shares.acquire(G, "b", T, 0, 10)
    assert offsets(again) == [2, 5, 6, 7, 8, 9]  # released 2 first; 3 rejected, 4 still locked
    assert again.deliveries[0].count == 2
    assert engine.state(G, T, 0).start == 2


def test_a_byte_bound_leases_only_below_its_end_released_and_new_records_alike(env):
    """`end_for(first, reach)` (a ShareFetch's max_bytes as an offset: here one record a batch) keeps the
    lease below it, wherever the lease starts: at released records or at new ones."""
    s, clock, engine, shares = env
    two = lambda first, reach: min(first + 2, reach)  # noqa: E731
    assert offsets(shares.acquire(G, "a", T, 0, 500, end_for=two)) == [0, 1]
    assert offsets(shares.acquire(G, "a", T, 0, 500, end_for=two)) == [2, 3]
    assert shares.acknowledge(G, "a", T, 0, [batch(0, 1, RELEASE), batch(2, 3, ACCEPT)])[0] == NONE
    assert offsets(shares.acquire(G, "a", T, 0, 500, end_for=lambda first, reach: first + 1)) == [0]
    assert offsets(shares.acquire(G, "a", T, 0, 500, end_for=two)) == [1]  # 2 and 3 are done, 4 is past the end
    assert offsets(shares.acquire(G, "a", T, 0, 500, end_for=two)) == [4, 5]


def test_acknowledgements_of_records_the_member_does_not_hold_change_nothing(env):
    s, clock, engine, shares = env
    shares.acquire(G, "a", T, 0, 3)
    before = (engine.state(G, T, 0).start, dict(engine.state(G, T, 0).leases))
    for member, batches in (("b", [batch(0, 0, ACCEPT)]),  # another member's record
                            ("a", [batch(0, 5, ACCEPT)]),  # 3..5 not acquired
                            ("a", [batch(0, 2, ACCEPT, REJECT)]),  # two types for three offsets
                            ("a", [batch(2, 1, ACCEPT)]),  # last before first
                            ("a", [batch(0, 0, 9)])):  # no such type
        code, _ = shares.acknowledge(G, member, T, 0, batches)
        assert code in (INVALID_RECORD_STATE, INVALID_REQUEST)
    assert (engine.state(G, T, 0).start, engine.state(G, T, 0).leases) == before
    clock.now += LOCK  # the lock ran out: too late to accept
    assert shares.acknowledge(G, "a", T, 0, [batch(0, 0, ACCEPT)])[0] == INVALID_RECORD_STATE
    assert shares.acknowledge(G, "a", T, 0, [batch(9, 9, GAP)])[0] == NONE  # a gap holds nothing


def test_delivery_count_limit_archives(env):
    s, clock, engine, shares = env
    shares.groups.alter_configs(G, [("share.delivery.count.limit", 0, "2")], False)
    for count in (1, 2):
        got = shares.acquire(G, "a", T, 0, 1)
        assert offsets(got) == [0] and got.deliveries[0].count == count
        shares.acknowledge(G, "a", T, 0, [batch(0, 0, RELEASE)])
    assert offsets(shares.acquire(G, "a", T, 0, 1)) == [1]  # 0 was archived
    assert engine.state(G, T, 0).start == 1


def test_leaving_member_releases_what_it_holds(env):
    s, clock, engine, shares = env
    shares.acquire(G, "a", T, 0, 4)
    shares.forget_member(G, "a")
    got = shares.acquire(G, "b", T, 0, 4)
    assert offsets(got) == [0, 1, 2, 3] and {d.count for d in got.deliveries} == {2}


def test_restart_makes_held_records_available_at_once(env, tmp_path):
    """As Kafka: the share-partition state loaded at start has acquired records AVAILABLE again
    (their delivery counts kept); acknowledged ones stay acknowledged."""
    s, clock, engine, shares = env
    shares.acquire(G, "a", T, 0, 4)
    shares.acknowledge(G, "a", T, 0, [batch(0, 1, ACCEPT)])
    engine2, shares2 = make(s, clock)  # a new engine over the same store: replays the pop log
    assert shares2.groups.config(G, "share.auto.offset.reset") == "earliest"
    assert shares2.acknowledge(G, "a", T, 0, [batch(2, 2, ACCEPT)])[0] == INVALID_RECORD_STATE  # held by nobody now
    again = shares2.acquire(G, "b", T, 0, 10)  # no lock to wait for
    assert [(d.offset, d.count) for d in again.deliveries] == [(2, 2), (3, 2)] + [(o, 1) for o in range(4, 10)]
    assert shares2.acknowledge(G, "b", T, 0, [batch(2, 9, ACCEPT)])[0] == NONE
    engine3, shares3 = make(s, clock)
    assert offsets(shares3.acquire(G, "c", T, 0, 10)) == []


def test_restart_keeps_pop_invisible_time(env):
    """A RocketMQ POP group's lease survives a restart with its deadline (RocketMQ revives a
    checkpoint only once its invisible time has passed); only share groups are released."""
    s, clock, engine, shares = env
    popped = engine.acquire("popg", T, 0, 2, LOCK)
    engine2, shares2 = make(s, clock)
    assert engine2.acquire("popg", T, 0, 10, 10 * LOCK).deliveries[0].offset == 2  # 0, 1 still invisible
    clock.now += LOCK
    again = engine2.acquire("popg", T, 0, 10, LOCK)
    assert [(d.offset, d.count) for d in again.deliveries] == [(0, 2), (1, 2)]
    assert engine2.ack([Receipt("popg", T, 0, 0, popped.pop_time)])[0] == 0  # that delivery's receipt expired


def test_reset_and_drop(env):
    s, clock, engine, shares = env
    shares.acquire(G, "a", T, 0, 10)
    shares.acknowledge(G, "a", T, 0, [batch(0, 9, ACCEPT)])
    engine.reset(G, T, 0, 3)
    assert offsets(shares.acquire(G, "a", T, 0, 10)) == [3, 4, 5, 6, 7, 8, 9]
    engine.drop(G, T, 0)
    engine.offsets.delete(G, T, 0)
    assert engine.state(G, T, 0) is None
    assert offsets(shares.acquire(G, "b", T, 0, 2)) == [0, 1]  # afresh, by share.auto.offset.reset
    engine.drop(G, T, 0)
    assert make(s, clock)[0].state(G, T, 0) is None  # the drop is logged


def test_share_group_and_pop_group_of_the_same_name_share_progress(env):
    s, clock, engine, shares = env
    kafka = shares.acquire(G, "a", T, 0, 3)
    pop = engine.acquire(G, T, 0, 3, LOCK)  # a RocketMQ POP consumer of group G
    assert offsets(kafka) == [0, 1, 2] and offsets(pop) == [3, 4, 5]
    engine.ack([Receipt(G, T, 0, d.offset, pop.pop_time) for d in pop.deliveries])
    shares.acknowledge(G, "a", T, 0, [batch(0, 2, ACCEPT)])
    assert engine.state(G, T, 0).start == 6
    assert offsets(shares.acquire(G, "a", T, 0, 10)) == [6, 7, 8, 9]
    # a POP receipt is not a Kafka acknowledgement: the POP group's records are not the member's
    pop2 = engine.acquire("other", T, 0, 1, LOCK)
    assert shares.acknowledge("other", "a", T, 0, [batch(pop2.deliveries[0].offset, pop2.deliveries[0].offset,
                                                          ACCEPT)])[0] == INVALID_RECORD_STATE


def test_group_configs_are_checked_and_persisted(env):
    s, clock, engine, shares = env
    groups = shares.groups
    assert groups.alter_configs(G, [("share.record.lock.duration.ms", 0, "1000")], False)  # below Kafka's minimum
    assert groups.alter_configs(G, [("share.isolation.level", 0, "dirty")], False)
    assert groups.alter_configs(G, [("share.no.such", 0, "1")], False)
    assert groups.alter_configs(G, [("share.record.lock.duration.ms", 0, "20000"),
                                    ("share.isolation.level", 0, "read_committed")], False) is None
    assert ShareGroups(lambda t: 1, s).int_config(G, "share.record.lock.duration.ms") == 20000
    assert shares.lock_ms(G) == 20000
