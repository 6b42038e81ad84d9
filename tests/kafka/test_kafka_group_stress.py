"""Classic-group rebalances under churn (the coordinator in process, trio's mock clock): members join,
leave, vanish (no LeaveGroup, session expiry) and come back at random while the others heartbeat and
poll slowly, as on a loaded machine. Whatever the interleaving, two members never hold the same
partition in one generation, and every assignment handed out belongs to that generation's members."""
from __future__ import annotations

import random

import pytest
import trio
import trio.testing

from semantics.kafka_groups import MEMBER_ID_REQUIRED, NONE, Coordinator

PARTITIONS = 12
GROUP = "stress"


def _assign(members: list[str]) -> dict[str, bytes]:
    """The leader's range assignment: partitions spread over the sorted member ids."""
    ids = sorted(members)
    out = {m: [] for m in ids}
    for p in range(PARTITIONS):
        out[ids[p % len(ids)]].append(p)
    return {m: ",".join(map(str, ps)).encode() for m, ps in out.items()}


class Client:
    """A member as an eager-protocol client behaves: it holds its partitions from a successful
    SyncGroup until it learns of a rebalance (a heartbeat error) or leaves; `holders` maps each live
    client to what it holds (a vanished one is left out: it is a zombie until it next speaks)."""

    def __init__(self, coordinator: Coordinator, name: str, rng: random.Random, record, holders: dict) -> None:
        self.c, self.name, self.rng, self.record, self.holders = coordinator, name, rng, record, holders
        self.member_id, self.generation = "", -1

    async def join_and_sync(self) -> bool:
        req = {"group_id": GROUP, "session_timeout_ms": 6000, "rebalance_timeout_ms": 8000,
               "member_id": self.member_id, "group_instance_id": None, "protocol_type": "consumer",
               "protocols": [{"name": "range", "metadata": b"m"}]}
        r = await self.c.join(req, 5, self.name, "/127.0.0.1")
        if r["error_code"] == MEMBER_ID_REQUIRED:
            self.member_id = r["member_id"]
            return await self.join_and_sync()
        if r["error_code"] != NONE:
            self.member_id = "" if r["error_code"] == 25 else self.member_id
            return False
        self.generation = r["generation_id"]
        members = [m["member_id"] for m in r["members"]]
        await trio.sleep(self.rng.random() * 3)  # a slow leader / follower
        assignments = [{"member_id": m, "assignment": a} for m, a in _assign(members).items()] if members else []
        s = await self.c.sync({"group_id": GROUP, "generation_id": self.generation, "member_id": self.member_id,
                               "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                               "assignments": assignments})
        if s["error_code"] != NONE:
            return False
        self.record(self.generation, self.member_id, s["assignment"], members)
        mine = set(filter(None, s["assignment"].decode().split(",")))
        for other, held in self.holders.items():
            if other != self.name and mine & held:
                self.record(self.generation, self.member_id, None, [f"{other} still holds {sorted(mine & held)}"])
        self.holders[self.name] = mine
        return True

    async def run(self, until: float) -> None:
        while trio.current_time() < until:
            if not await self.join_and_sync():
                await trio.sleep(0.1)
                continue
            while trio.current_time() < until:
                await trio.sleep(self.rng.choice([0.5, 1, 2, 2, 3]))  # heartbeats, sometimes late
                roll = self.rng.random()
                if roll < 0.05:
                    self.holders.pop(self.name, None)
                    self.c.leave(GROUP, [(self.member_id, None)])
                    self.member_id = ""
                    break
                if roll < 0.08:  # vanishes: no heartbeat for longer than its session
                    self.holders.pop(self.name, None)
                    await trio.sleep(7)
                code = self.c.heartbeat({"group_id": GROUP, "generation_id": self.generation,
                                         "member_id": self.member_id, "group_instance_id": None})
                if code != NONE:
                    self.holders.pop(self.name, None)  # revoked before rejoining (eager protocol)
                    if code == 25:
                        self.member_id = ""
                    break


@pytest.mark.parametrize("seed", range(8))
def test_no_partition_has_two_holders_in_a_generation(seed):
    rng = random.Random(seed)
    seen: dict[int, dict[str, bytes]] = {}
    members_of: dict[int, set[str]] = {}
    holders: dict[str, set] = {}
    problems = []

    def record(generation: int, member: str, assignment: bytes | None, members: list[str]) -> None:
        if assignment is None:
            problems.append(f"gen {generation}: {member} given what {members[0]}")
            return
        mine = seen.setdefault(generation, {})
        if member in mine and mine[member] != assignment:
            problems.append(f"gen {generation}: {member} given two assignments")
        mine[member] = assignment
        if members:
            members_of[generation] = set(members)

    async def main():
        c = Coordinator()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(c.run)
            until = trio.current_time() + 120
            async with trio.open_nursery() as clients:
                for i in range(6):
                    clients.start_soon(Client(c, f"c{i}", random.Random(rng.random()), record, holders).run, until)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert len(seen) > 5, seen.keys()  # churn made many generations
    for generation, held in seen.items():
        owners: dict[str, str] = {}
        for member, assignment in held.items():
            if generation in members_of and member not in members_of[generation]:
                problems.append(f"gen {generation}: {member} is not a member of it")
            for p in filter(None, assignment.decode().split(",")):
                if p in owners:
                    problems.append(f"gen {generation}: partition {p} held by {owners[p]} and {member}")
                owners[p] = member
    assert not problems, problems[:10]


def test_a_stalled_event_loop_does_not_expire_members():
    """After the loop was stalled longer than a session (a loaded machine), the first heartbeat
    served must not expire the member whose heartbeat is next in line; a member that really went
    away is still expired one session later."""
    clock = trio.testing.MockClock(autojump_threshold=0)

    async def main():
        c = Coordinator()
        holders: dict = {}
        got = []
        a = Client(c, "a", random.Random(1), lambda *args: got.append(args), holders)
        b = Client(c, "b", random.Random(2), lambda *args: got.append(args), holders)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(c.run)

            def both_stable() -> bool:
                g = c.groups.get(GROUP)
                return g is not None and g.state == "Stable" and set(g.members) == {a.member_id, b.member_id}

            async def settle(client: Client) -> None:
                """Join, rejoin on a failed join or a rebalance, as a client does, until one
                generation holds both (joining in lockstep can starve one of them)."""
                while not both_stable():
                    if not await client.join_and_sync():
                        await trio.sleep(0.1)
                        continue
                    while not both_stable():
                        await trio.sleep(0.5)
                        if c.heartbeat({"group_id": GROUP, "generation_id": client.generation,
                                        "member_id": client.member_id, "group_instance_id": None}) != NONE:
                            break
            with trio.fail_after(300):
                async with trio.open_nursery() as joins:
                    joins.start_soon(settle, a)
                    joins.start_soon(settle, b)
            generation = c.groups[GROUP].generation
            assert set(c.groups[GROUP].members) == {a.member_id, b.member_id}

            def beat(client):
                return c.heartbeat({"group_id": GROUP, "generation_id": generation, "member_id": client.member_id,
                                    "group_instance_id": None})
            clock.jump(15)  # the loop did not run for 15 s (sessions are 6 s)
            assert beat(a) == NONE and beat(b) == NONE
            assert c.groups[GROUP].generation == generation and len(c.groups[GROUP].members) == 2
            for _ in range(40):  # b goes away for good; a keeps heartbeating
                await trio.sleep(0.25)
                beat(a)
            assert set(c.groups[GROUP].members) == {a.member_id}
            nursery.cancel_scope.cancel()

    trio.run(main, clock=clock)
