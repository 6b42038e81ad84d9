"""semantics.kafka_streams_groups without a server: how a topology is configured against the topics
(task counts, repartition and changelog partition counts, copartitioning), internal topics made
through the callback, and random joins and leaves of simulated Streams clients never leaving one task
with two owners."""
import random
import uuid

import pytest
import trio
import trio.testing

from semantics.group_configs import GroupConfigs
from semantics.kafka_streams_groups import (INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS,
                                            MISSING_SOURCE_TOPICS, StreamsGroups, configure)


def _info(name, partitions=0, **configs):
    return {"name": name, "partitions": partitions, "replication_factor": 0,
            "topic_configs": [{"key": k.replace("_", "."), "value": v} for k, v in configs.items()]}


def _sub(sid, sources=(), sinks=(), rep_sources=(), changelogs=(), copartition=()):
    return {"subtopology_id": sid, "source_topics": list(sources), "source_topic_regex": [],
            "state_changelog_topics": list(changelogs), "repartition_sink_topics": list(sinks),
            "repartition_source_topics": list(rep_sources), "copartition_groups": list(copartition)}


WORD_COUNT = {"epoch": 0, "subtopologies": [
    _sub("0", sources=["in"], sinks=["app-rep"]),
    _sub("1", rep_sources=[_info("app-rep", cleanup_policy="delete")],
         changelogs=[_info("app-changelog", cleanup_policy="compact")])]}


def test_repartition_and_changelog_counts_follow_the_source():
    cfg = configure(WORD_COUNT, {"in": 6}.get, list)
    assert cfg.tasks == {"0": 6, "1": 6} and not cfg.missing
    assert cfg.internal == {"app-rep": (6, {"cleanup.policy": "delete"}),
                            "app-changelog": (6, {"cleanup.policy": "compact"})}


def test_chained_repartitions_fixed_counts_and_copartitioning():
    topology = {"epoch": 0, "subtopologies": [
        _sub("0", sources=["a"], sinks=["r1"]),
        _sub("1", rep_sources=[_info("r1")], sinks=["r2"]),
        _sub("2", rep_sources=[_info("r2"), _info("r3", 9)]),
        _sub("3", sources=["b"], rep_sources=[_info("r4")], sinks=[],
             copartition=[{"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": [0]}])]}
    cfg = configure(topology, {"a": 2, "b": 5}.get, list)
    assert cfg.internal["r1"][0] == 2 and cfg.internal["r2"][0] == 2  # through two hops
    assert cfg.internal["r3"][0] == 9 and cfg.tasks["2"] == 9  # a fixed count wins
    assert cfg.internal["r4"][0] == 5 and cfg.tasks["3"] == 5  # copartitioned with b


def _req(member, epoch, topology=None, active=None):
    joining = epoch == 0
    return {"group_id": "app", "member_id": member, "member_epoch": epoch, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000 if joining else -1,
            "topology": topology if joining else None, "active_tasks": [] if joining else active,
            "standby_tasks": [] if joining or active is not None else None,
            "warmup_tasks": [] if joining or active is not None else None,
            "process_id": "p" if joining else None, "user_endpoint": None, "client_tags": None,
            "task_offsets": None, "task_end_offsets": None, "shutdown_application": False}


class Topics:
    def __init__(self, **counts):
        self.counts, self.refuse = dict(counts), set()

    def create(self, name, partitions, configs):
        if name in self.refuse:
            return "refused"
        self.counts[name] = partitions
        return None


def _groups(topics: Topics) -> StreamsGroups:
    return StreamsGroups(lambda t: topics.counts.get(t, 0), lambda: list(topics.counts), topics.create)


def test_internal_topics_created_or_reported():
    async def main():
        topics = Topics(**{"in": 3})
        topics.refuse.add("app-changelog")
        sg = _groups(topics)
        r = sg.heartbeat(_req("m", 0, WORD_COUNT), "c", "/h")
        assert [s["status_code"] for s in r["status"]] == [MISSING_INTERNAL_TOPICS] and r["active_tasks"] == []
        assert sg.groups["app"].state() == "NotReady"
        topics.refuse.clear()
        r = sg.heartbeat(_req("m", r["member_epoch"], active=[]), "c", "/h")
        assert r["status"] == [] and len([p for t in r["active_tasks"] for p in t["partitions"]]) == 6
        assert topics.counts["app-changelog"] == 3 and topics.counts["app-rep"] == 3
        topics.counts["app-rep"] = 4  # someone re-made it with another count
        r = sg.heartbeat(_req("m", r["member_epoch"], active=r["active_tasks"]), "c", "/h")
        assert [s["status_code"] for s in r["status"]] == [INCORRECTLY_PARTITIONED_TOPICS]
        r = _groups(Topics()).heartbeat(_req("m", 0, WORD_COUNT), "c", "/h")
        assert [s["status_code"] for s in r["status"]] == [MISSING_SOURCE_TOPICS]
    trio.run(main)


class Client:
    """Holds exactly what its last response assigned; reports it on every heartbeat."""

    def __init__(self):
        self.member_id, self.epoch, self.held = str(uuid.uuid4()), 0, set()

    def heartbeat(self, sg):
        active = [{"subtopology_id": s, "partitions": sorted(p for t, p in self.held if t == s)}
                  for s in sorted({t for t, _p in self.held})]
        r = sg.heartbeat(_req(self.member_id, self.epoch, WORD_COUNT, active), "c", "/h")
        assert r["error_code"] == 0, r
        self.epoch = r["member_epoch"]
        if r["active_tasks"] is not None:
            self.held = {(t["subtopology_id"], p) for t in r["active_tasks"] for p in t["partitions"]}


@pytest.mark.parametrize("seed", range(6))
def test_random_membership_changes_keep_tasks_exclusive(seed):
    rng = random.Random(seed)

    async def main():
        sg = _groups(Topics(**{"in": 5}))
        clients = [Client()]
        for _ in range(150):
            roll = rng.random()
            if roll < 0.1 and len(clients) < 5:
                clients.append(Client())
            elif roll < 0.15 and len(clients) > 1:
                gone = clients.pop(rng.randrange(len(clients)))
                sg.heartbeat(_req(gone.member_id, -1), "c", "/h")
            rng.choice(clients).heartbeat(sg)
            held = [task for c in clients for task in c.held]
            assert len(held) == len(set(held)), "a task has two owners"
        for _ in range(6):
            for c in clients:
                c.heartbeat(sg)
        held = sorted(task for c in clients for task in c.held)
        assert held == sorted((s, p) for s in "01" for p in range(5))
        sizes = [len(c.held) for c in clients]
        assert max(sizes) - min(sizes) <= 1
    trio.run(main)


def test_endpoints_map_the_input_partitions_of_active_tasks():
    async def main():
        sg = _groups(Topics(**{"in": 2}))
        join = dict(_req("m", 0, WORD_COUNT), user_endpoint={"host": "h", "port": 7})
        r = sg.heartbeat(join, "c", "/h")
        assert r["endpoint_information_epoch"] > 0
        (entry,) = r["partitions_by_user_endpoint"]
        assert entry["user_endpoint"] == {"host": "h", "port": 7}
        assert entry["active_partitions"] == [{"topic": "app-rep", "partitions": [0, 1]},
                                              {"topic": "in", "partitions": [0, 1]}]
        again = dict(_req("m", r["member_epoch"], active=r["active_tasks"]),
                     endpoint_information_epoch=r["endpoint_information_epoch"])
        assert sg.heartbeat(again, "c", "/h")["partitions_by_user_endpoint"] is None  # the client is up to date
    trio.run(main)


def test_standby_tasks_go_to_the_other_member_never_beside_the_active():
    async def main():
        topics = Topics(**{"in": 3})
        sg = StreamsGroups(lambda t: topics.counts.get(t, 0), list, topics.create, standby_replicas=1)
        state = {}
        for name in ("a", "b", "a", "b", "a", "b", "a", "b"):
            epoch, active, _standby = state.get(name, (0, [], []))
            req = dict(_req(name, epoch, WORD_COUNT, active), process_id=f"process-{name}" if epoch == 0 else None)
            r = sg.heartbeat(req, "c", "/h")
            assert r["error_code"] == 0, r
            prev = state.get(name, (0, [], []))
            state[name] = (r["member_epoch"], r["active_tasks"] if r["active_tasks"] is not None else prev[1],
                           r["standby_tasks"] if r["standby_tasks"] is not None else prev[2])
            for _e, act, stb in state.values():
                assert not {(t["subtopology_id"], p) for t in act for p in t["partitions"]} & \
                    {(t["subtopology_id"], p) for t in stb for p in t["partitions"]}
        tasks = {n: ({(t["subtopology_id"], p) for t in a for p in t["partitions"]},
                     {(t["subtopology_id"], p) for t in s for p in t["partitions"]}) for n, (_e, a, s) in state.items()}
        every = {(s, p) for s in "01" for p in range(3)}
        assert tasks["a"][0] | tasks["b"][0] == every and not tasks["a"][0] & tasks["b"][0]
        stateful = {n: {t for t in a if t[0] == "1"} for n, (a, _s) in tasks.items()}  # "1" has the changelog
        assert tasks["a"][1] == stateful["b"] and tasks["b"][1] == stateful["a"]  # each standby on the other
    trio.run(main)


def test_a_refused_join_makes_no_group():
    async def main():
        sg = _groups(Topics(**{"in": 1}))
        r = sg.heartbeat(dict(_req("m", 0, WORD_COUNT), process_id=None), "c", "/h")
        assert r["error_code"] == 42 and sg.listing() == []
        assert sg.heartbeat(_req("x", 3, active=[]), "c", "/h")["error_code"] == 25 and sg.listing() == []
    trio.run(main)


def test_group_configs_set_the_session_timeout_interval_and_standbys_per_group():
    """streams.session.timeout.ms decides when a silent member goes, streams.heartbeat.interval.ms is
    what the answer gives, and a new streams.num.standby.replicas moves the standbys without a rejoin."""
    async def main():
        topics = Topics(**{"in": 2})
        configs = GroupConfigs()
        sg = StreamsGroups(lambda t: topics.counts.get(t, 0), list, topics.create, configs)
        assert configs.alter("app", [("streams.session.timeout.ms", 0, "60000"),
                                     ("streams.heartbeat.interval.ms", 0, "9000")], False) is None
        state = {}

        def rounds(n):
            for name in ("a", "b") * n:
                epoch, active, _standby = state.get(name, (0, [], []))
                req = dict(_req(name, epoch, WORD_COUNT, active), process_id=f"p-{name}" if epoch == 0 else None)
                r = sg.heartbeat(req, "c", "/h")
                assert r["error_code"] == 0 and r["heartbeat_interval_ms"] == 9000, r
                prev = state.get(name, (0, [], []))
                state[name] = (r["member_epoch"], r["active_tasks"] if r["active_tasks"] is not None else prev[1],
                               r["standby_tasks"] if r["standby_tasks"] is not None else prev[2])

        rounds(4)
        epochs = {n: e for n, (e, _a, _s) in state.items()}
        assert all(a for _e, a, _s in state.values()) and not any(s for _e, _a, s in state.values()), state
        assert configs.alter("app", [("streams.num.standby.replicas", 0, "1")], False) is None
        rounds(1)
        standbys = {(t["subtopology_id"], p) for _e, _a, s in state.values() for t in s for p in t["partitions"]}
        assert standbys == {("1", 0), ("1", 1)}, state  # each stateful task has its standby now
        assert {n: e for n, (e, _a, _s) in state.items()} == epochs  # with no new epoch
        await trio.sleep(50)  # past Kafka's default 45 s, within the group's 60 s
        sg.expire(sg.groups["app"])
        assert sorted(sg.groups["app"].members) == ["a", "b"]
        await trio.sleep(11)
        sg.expire(sg.groups["app"])
        assert not sg.groups["app"].members
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_initial_delay_and_assignment_interval_hold_the_target():
    """streams.initial.rebalance.delay.ms: a new group's member is at the group epoch with no task and the
    ASSIGNMENT_DELAYED status until the delay passed; streams.assignment.interval.ms: a later change waits
    until that long after the previous target. An instance id is refused (Kafka 4.3: not supported)."""
    async def main():
        topics = Topics(**{"in": 2})
        configs = GroupConfigs()
        sg = StreamsGroups(lambda t: topics.counts.get(t, 0), list, topics.create, configs)
        assert configs.alter("app", [("streams.initial.rebalance.delay.ms", 0, "3000"),
                                     ("streams.assignment.interval.ms", 0, "2000")], False) is None
        r = sg.heartbeat(_req("a", 0, WORD_COUNT), "c", "/h")
        assert r["member_epoch"] > 0 and r["active_tasks"] == [] and [s["status_code"] for s in r["status"]] == [5]
        held_epoch = r["member_epoch"]
        await trio.sleep(2)
        r = sg.heartbeat(_req("a", held_epoch, active=[]), "c", "/h")
        assert (r["member_epoch"], r["active_tasks"]) == (held_epoch, []), r
        await trio.sleep(1.5)
        r = sg.heartbeat(_req("a", held_epoch, active=[]), "c", "/h")
        assert r["member_epoch"] > held_epoch and r["status"] == [], r
        assert {(t["subtopology_id"], p) for t in r["active_tasks"] for p in t["partitions"]} == {
            (s, p) for s in "01" for p in range(2)}
        b = sg.heartbeat(_req("b", 0, WORD_COUNT), "c", "/h")  # within the interval of that target
        assert b["active_tasks"] == [] and [s["status_detail"] for s in b["status"]] == [
            "Assignment delayed due to the configured assignment interval."], b
        await trio.sleep(2.5)
        b = sg.heartbeat(_req("b", b["member_epoch"], active=[]), "c", "/h")
        assert b["status"] == [] and sg.groups["app"].target["b"], b
        static = sg.heartbeat(dict(_req("c", 0, WORD_COUNT), instance_id="i-1"), "c", "/h")
        assert (static["error_code"], static["error_message"]) == (42, "Static membership is not yet supported.")
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
