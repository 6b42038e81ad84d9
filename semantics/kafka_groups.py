"""Kafka classic consumer-group coordinator (JoinGroup/SyncGroup/Heartbeat/LeaveGroup).

One coordinator per gateway (this broker coordinates every group). Groups live in memory; their
committed offsets live in the shared offset table, so a restart only forces a rebalance.
Sessions are timed by the coordinator's own timer task (a trio system task started on first use):
a member that vanished without LeaveGroup is dropped once its session timeout passes, which
completes a waiting rebalance; requests that touch a group check too. A rebalance completes when
every member rejoined or when the rebalance timeout passes (the waiting JoinGroup calls time it).
"""
from __future__ import annotations

import dataclasses
import logging
import uuid

import trio

from semantics.session_timer import expire_every

log = logging.getLogger(__name__)

NONE = 0
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
FENCED_INSTANCE_ID = 82
MEMBER_ID_REQUIRED = 79
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
INVALID_GROUP_ID = 24

MIN_SESSION_MS = 1_000
MAX_SESSION_MS = 30 * 60_000
EXPIRY_TICK_S = 0.25  # how often the session timer looks (sessions are >= MIN_SESSION_MS)
STALL_S = 1.0  # a session check later than this (beyond the tick) means the event loop was stalled

EMPTY, PREPARING, COMPLETING, STABLE = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable"


@dataclasses.dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_ms: int
    rebalance_ms: int
    protocol_type: str
    protocols: list  # [(name, metadata bytes)]
    assignment: bytes = b""
    last_seen: float = 0.0
    joining: bool = False
    join_result: dict | None = None


@dataclasses.dataclass
class Group:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict = dataclasses.field(default_factory=dict)
    static: dict = dataclasses.field(default_factory=dict)  # group.instance.id -> member id
    pending: set = dataclasses.field(default_factory=set)  # ids handed out with MEMBER_ID_REQUIRED
    join_done: trio.Event = dataclasses.field(default_factory=trio.Event)
    sync_done: trio.Event = dataclasses.field(default_factory=trio.Event)
    rebalance_deadline: float = 0.0


class Coordinator:
    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        self._looked_at = None  # trio time of the last session check (a stalled loop leaves a gap)

    # ------------------------------------------------------------ helpers

    def _group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The session timer (a service of the App): expire members whose session ran out, in every
        group, whether or not a request comes."""
        await expire_every(EXPIRY_TICK_S, lambda: list(self.groups.values()), self._expire, "group",
                           on_tick=self._forgive_stall,
                           task_status=task_status)

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id or 'member'}-{uuid.uuid4()}"

    def _forgive_stall(self, now: float) -> None:
        """While the event loop was stalled (a loaded machine: no session check for longer than
        STALL_S, where the timer looks every EXPIRY_TICK_S), heartbeats waited unread in the
        sockets: that time does not count against sessions, or the first request served after the
        stall would expire members whose heartbeats are next in line (a needless rebalance)."""
        gap = 0.0 if self._looked_at is None else now - self._looked_at - EXPIRY_TICK_S
        self._looked_at = now
        if gap > STALL_S:
            for g in self.groups.values():
                for m in g.members.values():
                    m.last_seen += gap
            log.warning("event loop stalled %.1f s: member sessions extended by it", gap)

    def _expire(self, g: Group) -> None:
        """Drop members whose session ran out (members waiting in a rebalance are timed by it)."""
        now = trio.current_time()
        self._forgive_stall(now)
        dead = [m for m in g.members.values() if not m.joining and now - m.last_seen > m.session_ms / 1000]
        for m in dead:
            self._remove(g, m)
        if dead and g.state in (STABLE, COMPLETING):
            self._start_rebalance(g)
        if dead:
            self._maybe_complete(g)  # the members still waiting in JoinGroup need not wait for the dead

    def _remove(self, g: Group, m: Member) -> None:
        g.members.pop(m.member_id, None)
        if m.instance_id is not None and g.static.get(m.instance_id) == m.member_id:
            del g.static[m.instance_id]
        if not g.members:
            g.state = EMPTY
            g.protocol = None
            g.leader = None
            g.join_done.set()
            g.sync_done.set()
        elif g.leader == m.member_id:
            g.leader = next(iter(g.members))

    def _start_rebalance(self, g: Group) -> None:
        if g.state == PREPARING:
            return
        g.state = PREPARING
        g.sync_done.set()  # followers waiting for an assignment learn about the new round
        g.join_done = trio.Event()
        g.rebalance_deadline = trio.current_time() + max(
            (m.rebalance_ms for m in g.members.values()), default=0) / 1000

    def _maybe_complete(self, g: Group, force: bool = False) -> None:
        if g.state != PREPARING:
            return
        if not force and not all(m.joining for m in g.members.values()):
            return
        for m in [m for m in g.members.values() if not m.joining]:
            self._remove(g, m)
        if not g.members:
            return
        protocol = self._select_protocol(g)
        g.generation += 1
        g.protocol = protocol
        g.state = COMPLETING
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        g.sync_done = trio.Event()
        now = trio.current_time()
        members = [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                    "metadata": dict(m.protocols)[protocol]} for m in g.members.values()]
        for m in g.members.values():
            m.joining = False
            m.last_seen = now
            m.assignment = b""
            m.join_result = self._join_response(g, m, members if m.member_id == g.leader else [])
        g.join_done.set()

    def _select_protocol(self, g: Group) -> str:
        common = None
        for m in g.members.values():
            names = [n for n, _ in m.protocols]
            common = set(names) if common is None else common & set(names)
        votes: dict[str, int] = {}
        for m in g.members.values():
            first = next(n for n, _ in m.protocols if n in common)
            votes[first] = votes.get(first, 0) + 1
        return max(votes, key=lambda n: votes[n])

    def _join_response(self, g: Group, m: Member, members: list, error: int = NONE,
                       skip_assignment: bool = False) -> dict:
        return {"error_code": error, "generation_id": g.generation, "protocol_type": g.protocol_type,
                "protocol_name": g.protocol, "leader": g.leader or "", "member_id": m.member_id,
                "members": members, "skip_assignment": skip_assignment}

    def _current_members(self, g: Group) -> list[dict]:
        return [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                 "metadata": dict(m.protocols).get(g.protocol, b"")} for m in g.members.values()]

    # ------------------------------------------------------------ requests

    async def join(self, req: dict, version: int, client_id: str, client_host: str) -> dict:
        group_id = req["group_id"]
        if not group_id:
            return {"error_code": INVALID_GROUP_ID, "member_id": req["member_id"]}
        session_ms = req["session_timeout_ms"]
        if not MIN_SESSION_MS <= session_ms <= MAX_SESSION_MS:
            return {"error_code": INVALID_SESSION_TIMEOUT, "member_id": req["member_id"]}
        rebalance_ms = req.get("rebalance_timeout_ms", -1)
        if rebalance_ms is None or rebalance_ms < 0:
            rebalance_ms = session_ms
        protocols = [(p["name"], bytes(p["metadata"])) for p in req["protocols"]]
        g = self._group(group_id)
        self._expire(g)
        if not protocols or (g.members and g.protocol_type != req["protocol_type"]):
            return {"error_code": INCONSISTENT_GROUP_PROTOCOL, "member_id": req["member_id"]}
        if g.members:
            names = {n for n, _ in protocols}
            for other in g.members.values():
                names &= {n for n, _ in other.protocols}
            if not names and not (len(g.members) == 1 and req["member_id"] in g.members):
                return {"error_code": INCONSISTENT_GROUP_PROTOCOL, "member_id": req["member_id"]}

        member_id = req["member_id"]
        instance_id = req.get("group_instance_id")
        if instance_id is not None and not member_id:
            old_id = g.static.get(instance_id)
            member_id = self._new_member_id(client_id)
            if old_id is not None and old_id in g.members:
                # A restarted static member takes over its old slot without a rebalance.
                m = g.members.pop(old_id)
                m.member_id = member_id
                g.members[member_id] = m
                g.static[instance_id] = member_id
                if g.leader == old_id:
                    g.leader = member_id
                m.last_seen = trio.current_time()
                if g.state == STABLE and dict(m.protocols) == dict(protocols):
                    # KIP-814: no rebalance; a restarted leader gets the members but skips assignment
                    # (its SyncGroup returns the assignment it had).
                    leader = g.leader == member_id
                    return self._join_response(g, m, self._current_members(g) if leader else [],
                                               skip_assignment=leader)
                m.protocols = protocols
            g.static[instance_id] = member_id
        elif not member_id:
            member_id = self._new_member_id(client_id)
            if version >= 4:
                g.pending.add(member_id)
                return {"error_code": MEMBER_ID_REQUIRED, "member_id": member_id}
        elif member_id not in g.members and member_id not in g.pending:
            return {"error_code": UNKNOWN_MEMBER_ID, "member_id": member_id}
        elif instance_id is not None and g.static.get(instance_id) not in (None, member_id):
            return {"error_code": FENCED_INSTANCE_ID, "member_id": member_id}
        g.pending.discard(member_id)

        m = g.members.get(member_id)
        if m is None:
            m = g.members[member_id] = Member(member_id, instance_id, client_id or "", client_host, session_ms,
                                              rebalance_ms, req["protocol_type"], protocols)
            if instance_id is not None:
                g.static[instance_id] = member_id
        elif g.state == STABLE and m.protocols == protocols and member_id != g.leader:
            m.last_seen = trio.current_time()
            return self._join_response(g, m, [])
        m.session_ms, m.rebalance_ms, m.protocols = session_ms, rebalance_ms, protocols
        m.client_host = client_host
        if g.protocol_type is None or len(g.members) == 1:
            g.protocol_type = req["protocol_type"]
        if g.leader is None:
            g.leader = member_id
        m.joining = True
        m.join_result = None
        self._start_rebalance(g)
        g.rebalance_deadline = max(g.rebalance_deadline, trio.current_time() + rebalance_ms / 1000)
        self._maybe_complete(g)
        while m.join_result is None:
            done = g.join_done
            with trio.move_on_at(g.rebalance_deadline):
                await done.wait()
            if m.join_result is None and g.members.get(member_id) is not m:
                return {"error_code": UNKNOWN_MEMBER_ID, "member_id": member_id}
            if m.join_result is None and trio.current_time() >= g.rebalance_deadline:
                self._maybe_complete(g, force=True)
        return m.join_result

    async def sync(self, req: dict) -> dict:
        g = self.groups.get(req["group_id"])
        member_id = req["member_id"]
        if g is None or member_id not in g.members:
            return {"error_code": UNKNOWN_MEMBER_ID}
        self._expire(g)
        m = g.members.get(member_id)
        if m is None:
            return {"error_code": UNKNOWN_MEMBER_ID}
        if req["generation_id"] != g.generation:
            return {"error_code": ILLEGAL_GENERATION}
        if g.state == PREPARING:
            return {"error_code": REBALANCE_IN_PROGRESS}
        m.last_seen = trio.current_time()
        if g.state == COMPLETING:
            if member_id == g.leader:
                given = {a["member_id"]: bytes(a["assignment"]) for a in req["assignments"]}
                for other in g.members.values():
                    other.assignment = given.get(other.member_id, b"")
                g.state = STABLE
                g.sync_done.set()
            else:
                done = g.sync_done
                with trio.move_on_after(m.rebalance_ms / 1000):
                    await done.wait()
                if g.state != STABLE or g.members.get(member_id) is not m or req["generation_id"] != g.generation:
                    return {"error_code": REBALANCE_IN_PROGRESS}
        return {"error_code": NONE, "protocol_type": g.protocol_type, "protocol_name": g.protocol,
                "assignment": m.assignment}

    def heartbeat(self, req: dict) -> int:
        g = self.groups.get(req["group_id"])
        if g is None:
            return UNKNOWN_MEMBER_ID
        self._expire(g)
        m = g.members.get(req["member_id"])
        if m is None:
            return UNKNOWN_MEMBER_ID
        m.last_seen = trio.current_time()
        if g.state == PREPARING and m.joining:
            # A member already waiting in JoinGroup is told nothing new (Kafka: its generation check,
            # then REBALANCE_IN_PROGRESS): kafka-python reads that answer after its join completed and
            # rejoins at once, and a leader's rejoin starts yet another rebalance (group_churn.py).
            return NONE
        if req["generation_id"] != g.generation:  # as Kafka, before the state: stale in every state
            return ILLEGAL_GENERATION
        return REBALANCE_IN_PROGRESS if g.state == PREPARING else NONE

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[int]:
        """Remove members given as (member_id, group_instance_id); one error code per member."""
        g = self.groups.get(group_id)
        codes = []
        for member_id, instance_id in members:
            if g is not None and not member_id and instance_id is not None:
                member_id = g.static.get(instance_id, "")
            m = g.members.get(member_id) if g is not None else None
            if m is None:
                codes.append(UNKNOWN_MEMBER_ID)
                continue
            self._remove(g, m)
            codes.append(NONE)
        if g is not None and g.members and NONE in codes:
            self._start_rebalance(g)
            self._maybe_complete(g)
        return codes

    def check_commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                     has_offsets: bool) -> int:
        """Error code for an OffsetCommit (generation -1 and no member: a simple consumer), as Kafka's
        classic group answers: only a member of the current generation may commit to a live group, so
        a revoked or expired member cannot overwrite the group's offsets. `has_offsets`: the group
        has committed offsets (it exists, Empty, even without a coordinator record)."""
        g = self.groups.get(group_id)
        if g is not None:
            self._expire(g)
        if g is None or not g.members:
            if generation < 0:
                return NONE
            return UNKNOWN_MEMBER_ID if g is not None or has_offsets else GROUP_ID_NOT_FOUND
        if generation < 0 and not member_id and instance_id is None:
            return UNKNOWN_MEMBER_ID  # a simple commit to a group with members
        if instance_id is not None and g.static.get(instance_id) not in (None, member_id):
            return FENCED_INSTANCE_ID
        m = g.members.get(member_id)
        if m is None:
            return UNKNOWN_MEMBER_ID
        m.last_seen = trio.current_time()
        if generation != g.generation:
            return ILLEGAL_GENERATION
        # As Kafka's classic coordinator: a member of the current generation may commit while the
        # group prepares a rebalance (Java commits its positions in onJoinPrepare, before it
        # rejoins); only between JoinGroup and SyncGroup is the commit refused.
        if g.state == COMPLETING:
            return REBALANCE_IN_PROGRESS
        return NONE

    def describe(self, group_id: str) -> dict:
        g = self.groups.get(group_id)
        if g is None:
            return {"group_id": group_id, "group_state": "Dead", "protocol_type": "", "protocol_data": "",
                    "members": []}
        self._expire(g)
        return {"group_id": group_id, "group_state": g.state, "protocol_type": g.protocol_type or "",
                "protocol_data": g.protocol or "",
                "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "member_metadata": dict(m.protocols).get(g.protocol, b""),
                             "member_assignment": m.assignment} for m in g.members.values()]}

    def subscribed_topics(self, group_id: str) -> set[str]:
        """Topics the members of a consumer group subscribe to (from their protocol metadata)."""
        g = self.groups.get(group_id)
        if g is None:
            return set()
        self._expire(g)
        out: set[str] = set()
        if g.protocol_type == "consumer":
            for m in g.members.values():
                out |= subscription_topics(dict(m.protocols).get(g.protocol) or next(
                    (meta for _, meta in m.protocols), b""))
        return out

    def listing(self) -> list[tuple[str, str, str]]:
        """(group_id, protocol_type, state) of every group with a coordinator record."""
        out = []
        for g in self.groups.values():
            self._expire(g)
            out.append((g.group_id, g.protocol_type or "", g.state))
        return out

    def delete(self, group_id: str) -> int:
        g = self.groups.get(group_id)
        if g is not None:
            self._expire(g)
        if g is not None and g.members:
            return NON_EMPTY_GROUP
        self.groups.pop(group_id, None)
        return NONE


def subscription_topics(metadata: bytes) -> set[str]:
    """The topics of a ConsumerProtocolSubscription (version i16, then an array of i16-length
    strings; every version starts so); empty when the bytes are not one."""
    try:
        count = int.from_bytes(metadata[2:6], "big", signed=True)
        pos, out = 6, set()
        for _ in range(max(count, 0)):
            size = int.from_bytes(metadata[pos:pos + 2], "big", signed=True)
            if size < 0 or pos + 2 + size > len(metadata):
                return set()
            out.add(metadata[pos + 2:pos + 2 + size].decode())
            pos += 2 + size
        return out
    except (UnicodeDecodeError, ValueError):
        return set()
