"""KIP-932 share groups: membership (ShareGroupHeartbeat), the server-side assignment and the
group configs.

A share group has no partition ownership: many members may fetch from one partition, and the
records themselves are leased (`semantics.share_partitions`). The coordinator therefore hands out
an assignment at once (no revocation round): each subscribed topic's partitions are spread over
its subscribers round-robin, and when the subscribers outnumber the partitions every subscriber
gets every partition, as Kafka's simple assignor does. Any change of members or partitions bumps
the group epoch; a member's epoch is the group epoch it last received. Members whose session runs
out are removed (their leases are left to run out, as Kafka does for a member that vanished).

A topic the group subscribes to for the first time is assigned from the next heartbeat on, not in
the one that subscribed it: Kafka 4.3 first initializes the topic's share-partition state
(InitializeShareGroupState) and assigns once that is done, so members that join together get their
share of the partitions before any of them fetches (librdkafka's 0172 mixed-ack-mode test counts on
it: on Kafka the first member's heartbeat answers an empty assignment, its next one half the topic).

Group configs (`share.record.lock.duration.ms`, `share.delivery.count.limit`,
`share.auto.offset.reset`, `share.isolation.level`, ...) live in `semantics.group_configs` (shared
with the streams groups), which also keeps the known share-group ids; configs change by
IncrementalAlterConfigs on the GROUP resource.
"""
from __future__ import annotations

import dataclasses

import trio

from semantics.group_configs import GroupConfigs
from semantics.kafka_consumer_groups import MemberGroups, heartbeat_error

NONE, INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH = 0, 42, 25, 110
GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, INVALID_CONFIG = 69, 68, 40
LEAVE = -1
ASSIGNOR = "simple"


@dataclasses.dataclass
class Member:
    member_id: str
    rack_id: str | None
    client_id: str
    client_host: str
    topics: list
    epoch: int = 0
    last_seen: float = 0.0
    sent: tuple | None = None  # (epoch, assignment) last sent


@dataclasses.dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict = dataclasses.field(default_factory=dict)
    target: dict = dataclasses.field(default_factory=dict)  # member id -> {topic: [partitions]}
    partition_counts: dict = dataclasses.field(default_factory=dict)
    initialized: set = dataclasses.field(default_factory=set)  # topics whose partitions may be assigned

    def state(self) -> str:
        if not self.members:
            return "Empty"
        return "Stable" if all(m.epoch == self.assignment_epoch for m in self.members.values()) else "Reconciling"


def assign(members: list[Member], counts: dict[str, int]) -> dict[str, dict[str, list[int]]]:
    """member id -> {topic: partitions}: round-robin per topic, everything to everyone when the
    subscribers outnumber the partitions."""
    out = {m.member_id: {} for m in members}
    for topic, n in sorted(counts.items()):
        subs = sorted(m.member_id for m in members if topic in m.topics)
        if not subs or n <= 0:
            continue
        if len(subs) >= n:
            for mid in subs:
                out[mid][topic] = list(range(n))
            continue
        for p in range(n):
            out[subs[p % len(subs)]].setdefault(topic, []).append(p)
    return out


class ShareGroups(MemberGroups):
    """The share-group coordinator of one gateway; `partition_count(topic) -> int` (0: no such
    topic) is how it sees topics, `store` keeps the group configs.

    Membership and share sessions are apart, as in Kafka 4.3: a member that leaves (epoch -1) or
    expires keeps its share session, so its last acknowledgements (a closing consumer leaves the
    group and then sends its final ShareAcknowledge) still count; the session ends with its final
    epoch or its connection, and records it still holds with their acquisition locks."""

    kind = "share group"

    def __init__(self, partition_count, store=None, configs: GroupConfigs | None = None) -> None:
        super().__init__()
        self.partition_count = partition_count
        self.group_configs = configs if configs is not None else GroupConfigs(store)
        for group_id in self.group_configs.share_groups:  # known across restarts (empty until members come back)
            self.groups[group_id] = ShareGroup(group_id)

    # ---- configs --------------------------------------------------------------------------
    @property
    def configs(self) -> dict[str, dict[str, str]]:
        """group id -> the configs set on it (every group's: the store is shared with streams groups)."""
        return self.group_configs.values

    def config(self, group_id: str, name: str) -> str:
        return self.group_configs.get(group_id, name)

    def int_config(self, group_id: str, name: str) -> int:
        return self.group_configs.get_int(group_id, name)

    def alter_configs(self, group_id: str, ops: list[tuple[str, int, str | None]], validate_only: bool) -> str | None:
        """(name, operation 0 set / 1 delete, value) changes; returns why they are refused, or None."""
        return self.group_configs.alter(group_id, ops, validate_only)

    def _persist(self) -> None:
        self.group_configs.share_groups = sorted(self.groups)
        self.group_configs.persist()

    # ---- membership -----------------------------------------------------------------------
    def expired(self, g: ShareGroup, m: Member, now: float) -> bool:
        return now - m.last_seen > self.int_config(g.group_id, "share.session.timeout.ms") / 1000

    def heartbeat(self, req: dict, client_id: str, client_host: str) -> dict:
        group_id, member_id, epoch = req["group_id"], req["member_id"], req["member_epoch"]
        if not group_id:
            return heartbeat_error(INVALID_REQUEST, "GroupId can't be empty.")
        if not member_id:
            return heartbeat_error(INVALID_REQUEST, "MemberId can't be empty.")
        g = self.get_or_create(group_id)
        self.expire(g)
        if epoch == LEAVE:
            self._remove(g, member_id)
            return {"error_code": NONE, "member_id": member_id, "member_epoch": LEAVE,
                    "heartbeat_interval_ms": 0, "assignment": None}
        m = g.members.get(member_id)
        if epoch == 0:
            if req["subscribed_topic_names"] is None and m is None:
                return heartbeat_error(INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
            if m is None:
                m = g.members[member_id] = Member(member_id, req.get("rack_id"), client_id, client_host, [])
                g.epoch += 1
            m.sent = None
        elif m is None:
            return heartbeat_error(UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        elif epoch > m.epoch:
            return heartbeat_error(FENCED_MEMBER_EPOCH, f"The member epoch {epoch} is newer than the current one ({m.epoch}).")
        m.last_seen = trio.current_time()
        names = req["subscribed_topic_names"]
        if names is not None and sorted(set(names)) != m.topics:
            m.topics = sorted(set(names))
            g.epoch += 1
        self._refresh(g)
        m.epoch = g.assignment_epoch
        assignment = {t: sorted(ps) for t, ps in g.target.get(member_id, {}).items() if ps}
        current = (m.epoch, assignment)
        send = current != m.sent or epoch != m.epoch
        m.sent = current
        interval = self.int_config(group_id, "share.heartbeat.interval.ms")
        return {"error_code": NONE, "member_id": member_id, "member_epoch": m.epoch,
                "heartbeat_interval_ms": interval, "assignment": assignment if send else None}

    def _refresh(self, g: ShareGroup) -> None:
        topics = {t for m in g.members.values() for t in m.topics}
        existing = {t: n for t in sorted(topics) if (n := self.partition_count(t)) > 0}
        counts = {t: n for t, n in existing.items() if t in g.initialized}
        if counts != g.partition_counts:
            g.partition_counts = counts
            g.epoch += 1
        if g.epoch > g.assignment_epoch:
            g.target = assign(list(g.members.values()), counts)
            g.assignment_epoch = g.epoch
        if set(existing) - g.initialized:  # initialized now: assigned from the next heartbeat on
            g.initialized |= set(existing)
            g.epoch += 1

    def known(self) -> list[str]:
        """Every share group id this gateway knows (from a heartbeat or a config), live or not."""
        with_share_configs = {g for g, c in self.configs.items() if any(n.startswith("share.") for n in c)}
        return sorted(set(self.groups) | with_share_configs)

    def is_member(self, group_id: str, member_id: str) -> bool:
        g = self.groups.get(group_id)
        return g is not None and member_id in g.members

    # ---- admin ----------------------------------------------------------------------------
    def get_or_create(self, group_id: str) -> ShareGroup:
        """The share group, created empty (and remembered) on first use: a heartbeat, or an
        AlterShareGroupOffsets on a group id nobody uses yet (as Kafka does)."""
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = ShareGroup(group_id)
            self._persist()
        return g

    def empty(self, group_id: str) -> bool:
        g = self.groups.get(group_id)
        if g is None:
            return True
        self.expire(g)
        return not g.members

    def delete(self, group_id: str) -> int:
        """DeleteGroups: NON_EMPTY_GROUP while members are alive; the configs go with the group."""
        if not self.empty(group_id):
            return NON_EMPTY_GROUP
        self.groups.pop(group_id, None)
        self.configs.pop(group_id, None)
        self._persist()
        return NONE
