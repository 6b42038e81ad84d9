"""KIP-848 consumer groups (ConsumerGroupHeartbeat): the coordinator assigns partitions itself.

Each heartbeat may change the group (a member joins, leaves, changes its subscription, or a
subscribed topic gains partitions), which bumps the group epoch; the target assignment is then
recomputed (`uniform`, sticky and balanced, or `range`) and every member reconciles towards its
target one heartbeat at a time. A partition is never given to a member while another still owns
it: a member first gets its assignment minus what it must give up and keeps its epoch until it
reports (in `topic_partitions`) that it let those go; only then does it move to the new epoch and
receive the partitions nobody else owns. Members are expired by their session timeout, and a
member that does not give up revoked partitions within its rebalance timeout is fenced.
"""
from __future__ import annotations

import dataclasses
import re
import uuid

import trio

from semantics.session_timer import expire_every


NONE, INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH = 0, 42, 25, 110
UNSUPPORTED_ASSIGNOR, STALE_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP = 112, 113, 69, 68
INVALID_REGULAR_EXPRESSION = 128  # Kafka's Errors.INVALID_REGULAR_EXPRESSION
LEAVE, STATIC_LEAVE = -1, -2
SESSION_MS = 45_000  # Kafka's group.consumer.session.timeout.ms
HEARTBEAT_MS = 5_000  # Kafka's group.consumer.heartbeat.interval.ms
ASSIGNORS = ("uniform", "range")
TICK_S = 0.25

Assignment = dict  # topic name -> set of partitions


@dataclasses.dataclass
class Member:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topics: list  # the subscribed names, or the topics its regex matches
    regex: str | None = None  # subscribed_topic_regex (v1), matched against whole topic names
    assignor: str | None = None
    rebalance_ms: int = 300_000
    epoch: int = 0
    assigned: Assignment = dataclasses.field(default_factory=dict)  # what it was last given
    revoking: Assignment = dataclasses.field(default_factory=dict)  # what it must still let go
    revoke_deadline: float = 0.0
    last_seen: float = 0.0
    sent: tuple | None = None  # (epoch, assignment) of the last response that carried one


@dataclasses.dataclass
class Group:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict = dataclasses.field(default_factory=dict)
    target: dict = dataclasses.field(default_factory=dict)  # member id -> Assignment
    partition_counts: dict = dataclasses.field(default_factory=dict)  # what the target was computed for

    @property
    def assignor(self) -> str:
        named = [m.assignor for m in self.members.values() if m.assignor]
        return max(set(named), key=named.count) if named else ASSIGNORS[0]

    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.epoch > self.assignment_epoch:
            return "Assigning"
        if any(m.epoch != self.assignment_epoch or m.revoking for m in self.members.values()):
            return "Reconciling"
        return "Stable"


def _owned(m: Member) -> set[tuple[str, int]]:
    return {(t, p) for a in (m.assigned, m.revoking) for t, ps in a.items() for p in ps}


def _as_pairs(a: Assignment) -> set[tuple[str, int]]:
    return {(t, p) for t, ps in a.items() for p in ps}


def _as_assignment(pairs) -> Assignment:
    out: Assignment = {}
    for t, p in pairs:
        out.setdefault(t, set()).add(p)
    return out


def heartbeat_error(code: int, message: str) -> dict:
    """A ConsumerGroupHeartbeat / ShareGroupHeartbeat answer carrying an error."""
    return {"error_code": code, "error_message": message, "member_id": None, "member_epoch": 0,
            "heartbeat_interval_ms": 0, "assignment": None}


class MemberGroups:
    """What the KIP-848 (consumer) and KIP-932 (share) coordinators share: groups of members with a
    group epoch and a target assignment, members dropped by a session timer, the group listing.
    A subclass says when a member has expired (`expired`) and may react to a removal (`_remove`)."""

    kind = "group"  # for the timer's log lines

    def __init__(self) -> None:
        self.groups: dict = {}

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The session timer (a service of the App): expire members whether or not a request comes."""
        await expire_every(TICK_S, lambda: list(self.groups.values()), self.expire, self.kind,
                           task_status=task_status)

    def expire(self, g) -> None:
        now = trio.current_time()
        for m in list(g.members.values()):
            if self.expired(g, m, now):
                self._remove(g, m.member_id)

    def expired(self, g, m, now: float) -> bool:
        raise NotImplementedError

    def _remove(self, g, member_id: str) -> bool:
        """Drop the member (a new group epoch); whether it was there."""
        if g.members.pop(member_id, None) is None:
            return False
        g.target.pop(member_id, None)
        g.epoch += 1
        return True

    def listing(self) -> list[tuple[str, str]]:
        """(group id, state) of every group."""
        for g in self.groups.values():
            self.expire(g)
        return [(g.group_id, g.state()) for g in self.groups.values()]


def compute_target(g: Group, counts: dict[str, int]) -> dict[str, Assignment]:
    """member id -> target assignment over the topics the members subscribe to."""
    members = sorted(g.members.values(), key=lambda m: m.member_id)
    subscribers = {t: [m.member_id for m in members if t in m.topics] for t in counts}
    target = {m.member_id: set() for m in members}
    if g.assignor == "range":
        for t, n in sorted(counts.items()):
            subs = subscribers[t]
            if not subs:
                continue
            per, extra = divmod(n, len(subs))
            start = 0
            for i, mid in enumerate(subs):
                size = per + (i < extra)
                target[mid] |= {(t, p) for p in range(start, start + size)}
                start += size
        return {mid: _as_assignment(pairs) for mid, pairs in target.items()}
    parts = [(t, p) for t, n in sorted(counts.items()) for p in range(n) if subscribers[t]]
    cap = {m.member_id: 0 for m in members}
    for t, _p in parts:  # balanced counts first
        cap[min(subscribers[t], key=lambda mid: (cap[mid], mid))] += 1
    owner = {pair: m.member_id for m in members for pair in _as_pairs(m.assigned)}
    rest = []
    for pair in parts:  # sticky: keep what a member has, up to its count
        mid = owner.get(pair)
        if mid is not None and mid in subscribers[pair[0]] and len(target[mid]) < cap[mid]:
            target[mid].add(pair)
        else:
            rest.append(pair)
    for t, p in rest:
        cands = subscribers[t]
        mid = min(cands, key=lambda c: (len(target[c]) >= cap[c], len(target[c]), c))
        target[mid].add((t, p))
    return {mid: _as_assignment(pairs) for mid, pairs in target.items()}


class ReconcilingGroups(MemberGroups):
    """What the KIP-848 consumer and KIP-1071 streams coordinators share: members reconcile towards
    their target one heartbeat at a time (revocation before reassignment, see the module docstring),
    offsets are committed with the member epoch, and a group is deleted only when empty. The
    assignment is what they differ in: topic partitions for a consumer, (subtopology, partition)
    tasks for Kafka Streams, both `{name: set of partitions}`."""

    def expired(self, g: Group, m: Member, now: float) -> bool:
        """Its session ran out, or it kept revoked partitions past its rebalance timeout."""
        return now - m.last_seen > SESSION_MS / 1000 or bool(m.revoking and now > m.revoke_deadline)

    def _reconcile(self, g: Group, m: Member, now: float) -> None:
        """Move the member one step towards its target (see the module docstring)."""
        if m.revoking:
            return
        target = _as_pairs(g.target.get(m.member_id, {}))
        held = _as_pairs(m.assigned)
        if held - target:
            m.assigned = _as_assignment(held & target)
            m.revoking = _as_assignment(held - target)
            m.revoke_deadline = now + m.rebalance_ms / 1000
            return
        taken = set().union(*(_owned(o) for o in g.members.values() if o is not m))
        m.assigned = _as_assignment(target - taken)
        m.epoch = g.assignment_epoch

    def check_commit(self, group_id: str, member_id: str, epoch: int) -> int | None:
        """OffsetCommit error for a group of this coordinator, or None when the group is not one."""
        g = self.groups.get(group_id)
        if g is None:
            return None
        self.expire(g)
        if not g.members and epoch < 0:
            return NONE
        m = g.members.get(member_id)
        if m is None:
            return UNKNOWN_MEMBER_ID
        return NONE if epoch == m.epoch else STALE_MEMBER_EPOCH

    def delete(self, group_id: str) -> int | None:
        g = self.groups.get(group_id)
        if g is None:
            return None
        self.expire(g)
        if g.members:
            return NON_EMPTY_GROUP
        del self.groups[group_id]
        return NONE


class ConsumerGroups(ReconcilingGroups):
    """`partition_count(topic) -> int` (0: no such topic) and `topic_names() -> list` (the topics a
    regex subscription may match) are how the coordinator sees topics."""

    kind = "consumer group"

    def __init__(self, partition_count, topic_names=lambda: []) -> None:
        super().__init__()
        self.partition_count = partition_count
        self.topic_names = topic_names

    def _group(self, group_id: str) -> Group:
        return self.groups.setdefault(group_id, Group(group_id))

    def heartbeat(self, req: dict, version: int, client_id: str, client_host: str) -> dict:
        group_id, member_id, epoch = req["group_id"], req["member_id"], req["member_epoch"]
        if not group_id:
            return heartbeat_error(INVALID_REQUEST, "GroupId can't be empty.")
        assignor = req.get("server_assignor")
        if assignor is not None and assignor not in ASSIGNORS:
            return heartbeat_error(UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. "
                                                f"Supported assignors: {', '.join(ASSIGNORS)}.")
        g = self._group(group_id)
        self.expire(g)
        now = trio.current_time()
        if epoch in (LEAVE, STATIC_LEAVE):
            self._remove(g, member_id)
            return {"error_code": NONE, "member_id": member_id, "member_epoch": epoch,
                    "heartbeat_interval_ms": 0, "assignment": None}
        if epoch == 0:
            if not member_id and version == 0:
                member_id = str(uuid.uuid4())
            if not member_id:
                return heartbeat_error(INVALID_REQUEST, "MemberId can't be empty.")
            if req["subscribed_topic_names"] is None and req.get("subscribed_topic_regex") is None:
                return heartbeat_error(INVALID_REQUEST, "SubscribedTopicNames or SubscribedTopicRegex must be set in "
                                               "first request.")
            instance = req.get("instance_id")
            for other in [o for o in g.members.values() if instance is not None and o.instance_id == instance]:
                self._remove(g, other.member_id)  # a static member's new incarnation replaces the old
            old = g.members.get(member_id)
            if old is not None:  # rejoining from scratch: it gave up everything it had
                self._remove(g, member_id)
            m = g.members[member_id] = Member(member_id, instance, req.get("rack_id"), client_id, client_host,
                                              sorted(set(req["subscribed_topic_names"] or [])))
            g.epoch += 1
        else:
            m = g.members.get(member_id)
            if m is None:
                return heartbeat_error(UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if epoch != m.epoch:
                return heartbeat_error(FENCED_MEMBER_EPOCH, f"The member epoch {epoch} is not the current one "
                                                   f"({m.epoch}); the member must rejoin.")
        m.last_seen = now
        if assignor is not None:
            m.assignor = assignor
        if req.get("rebalance_timeout_ms", -1) > 0:
            m.rebalance_ms = req["rebalance_timeout_ms"]
        names, regex = req["subscribed_topic_names"], req.get("subscribed_topic_regex")
        if regex is not None:
            try:
                pattern = re.compile(regex)
            except re.error as exc:
                return heartbeat_error(INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex {regex} is not valid: {exc}")
            m.regex = regex or None
            names = [t for t in self.topic_names() if pattern.fullmatch(t)] if regex else names
        elif names is not None:
            m.regex = None
        if m.regex is not None and names is None:  # a regex's matches change as topics come and go
            names = [t for t in self.topic_names() if re.fullmatch(m.regex, t)]
        if names is not None and sorted(set(names)) != m.topics:
            m.topics = sorted(set(names))
            g.epoch += 1
        owned = req.get("topic_partitions")
        if owned is not None and m.revoking:
            reported = {(t, p) for t, ps in req["owned_by_name"].items() for p in ps}
            if not reported & _as_pairs(m.revoking):
                m.revoking = {}
        self._refresh_target(g)
        self._reconcile(g, m, now)
        full = epoch == 0 or owned is not None
        current = (m.epoch, {t: sorted(ps) for t, ps in m.assigned.items() if ps})
        send = full or current != m.sent
        m.sent = current
        return {"error_code": NONE, "member_id": member_id, "member_epoch": m.epoch,
                "heartbeat_interval_ms": HEARTBEAT_MS, "assignment": current[1] if send else None}

    def _refresh_target(self, g: Group) -> None:
        topics = {t for m in g.members.values() for t in m.topics}
        counts = {t: n for t in sorted(topics) if (n := self.partition_count(t)) > 0}
        if counts != g.partition_counts:
            g.partition_counts = counts
            g.epoch += 1
        if g.epoch > g.assignment_epoch:
            g.target = compute_target(g, counts)
            g.assignment_epoch = g.epoch
