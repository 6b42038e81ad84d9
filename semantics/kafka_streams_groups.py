"""KIP-1071 streams groups (StreamsGroupHeartbeat): the coordinator assigns Kafka Streams tasks.

A member joins with the application's topology (subtopologies with their source, repartition and
changelog topics); the group keeps the topology of the highest epoch. The coordinator configures
it against the topics that exist: a subtopology has one task per partition of its largest source
topic; a repartition topic without a fixed count gets the task count of the subtopologies writing
into it (and copartitioned topics one count); a changelog gets its subtopology's task count.
Missing internal topics are created through `create_topic` with the topology's configs (changelogs
compacted); missing source topics leave the group without tasks, reported in the heartbeat status,
as Kafka does. Tasks are `{subtopology id: set of partitions}` and go through the consumer
coordinator's sticky uniform assignment and reconciliation (`ReconcilingGroups`): a task is not
given to a member while another still reports owning it. With the group config
`streams.num.standby.replicas` (default: the broker's `group.streams.num.standby.replicas`, 0) each
stateful active task also gets that many standby tasks on other members, preferring members of another
process; a member is never given a task as standby while it still owns it as active. As in Kafka 4.3
(whose sticky task assignor has none), no warm-up tasks are assigned, and static membership is refused
as Kafka 4.3 refuses it. The group configs `streams.heartbeat.interval.ms` (the interval a heartbeat
answer gives), `streams.session.timeout.ms` (when a silent member is dropped),
`streams.initial.rebalance.delay.ms` and `streams.assignment.interval.ms` (when a new target may be
computed) are read per group too (`semantics.group_configs`).
"""
from __future__ import annotations

import dataclasses

import trio

from semantics.group_configs import GroupConfigs
from semantics.kafka_streams_topology import configure
from semantics.kafka_consumer_groups import (FENCED_MEMBER_EPOCH, INVALID_REQUEST, LEAVE, NONE,
                                             STATIC_LEAVE, UNKNOWN_MEMBER_ID, Group, Member, ReconcilingGroups,
                                             _as_pairs, _owned, compute_target)

STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5
INITIAL_DELAY = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_DELAY = "Assignment delayed due to the configured assignment interval."
STREAMS_INVALID_TOPOLOGY = 130
ASSIGNOR = "sticky"  # Kafka's default streams task assignor (here: the sticky uniform one)
ACCEPTABLE_RECOVERY_LAG = 10_000  # Kafka's defaults (no warm-up tasks are assigned here)
TASK_OFFSET_INTERVAL_MS = 60_000


@dataclasses.dataclass
class StreamsMember(Member):
    process_id: str = ""
    endpoint: dict | None = None  # {"host", "port"} for interactive queries
    client_tags: dict = dataclasses.field(default_factory=dict)
    topology_epoch: int = 0
    previous_epoch: int = -1
    standby: dict = dataclasses.field(default_factory=dict)  # standby tasks it was last given
    task_offsets: list = dataclasses.field(default_factory=list)
    task_end_offsets: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class StreamsGroup(Group):
    topology: dict | None = None  # the request's topology (the highest epoch seen)
    topology_epoch: int = -1
    tasks: dict = dataclasses.field(default_factory=dict)  # subtopology id -> task count
    sub_topics: dict = dataclasses.field(default_factory=dict)  # subtopology id -> its input topics
    internal: dict = dataclasses.field(default_factory=dict)  # internal topic -> partitions (configured)
    statuses: list = dataclasses.field(default_factory=list)  # (code, detail) of the whole group
    standby_target: dict = dataclasses.field(default_factory=dict)  # member id -> standby tasks
    shutdown: bool = False
    endpoints: list = dataclasses.field(default_factory=list)  # PartitionsByUserEndpoint last computed
    endpoint_epoch: int = 0
    standby_replicas: int = 0  # the streams.num.standby.replicas its standby target was computed with
    first_assignment_at: float | None = None  # when its first target may be computed (initial delay)
    held: bool = False  # its first target is being held back by the initial delay
    assigned_at: float = float("-inf")  # when its target was last computed (assignment interval)

    @property
    def assignor(self) -> str:
        return ASSIGNOR

    def state(self) -> str:
        """Kafka's streams-group states: NotReady while the topology cannot be configured."""
        if self.members and not self.tasks:
            return "NotReady"
        return super().state()


def task_list(assignment: dict) -> list[dict]:
    """{subtopology: partitions} as the wire's TaskIds."""
    return [{"subtopology_id": sid, "partitions": sorted(ps)} for sid, ps in sorted(assignment.items()) if ps]


def standby_target(g: StreamsGroup, replicas: int) -> dict:
    """member id -> standby tasks: `replicas` per stateful active task of the target (a subtopology with
    a changelog; as Kafka, a stateless task has nothing to keep warm), each on a member that is not its
    active owner nor already a standby of it, preferring another process, then the least loaded."""
    members = sorted(g.members.values(), key=lambda m: m.member_id)
    out = {m.member_id: {} for m in members}
    if replicas <= 0 or len(members) < 2:
        return out
    load = {m.member_id: sum(len(ps) for ps in g.target.get(m.member_id, {}).values()) for m in members}
    stateful = {s["subtopology_id"] for s in g.topology["subtopologies"] if s["state_changelog_topics"]}
    owner = {(sid, p): mid for mid, a in g.target.items() for sid, ps in a.items() for p in ps if sid in stateful}
    process = {m.member_id: m.process_id for m in members}
    for (sid, p), active in sorted(owner.items()):
        holders = [active]
        for _ in range(replicas):
            cands = [m.member_id for m in members if m.member_id not in holders]
            if not cands:
                break
            mid = min(cands, key=lambda c: (process[c] in {process[h] for h in holders}, load[c], c))
            out[mid].setdefault(sid, set()).add(p)
            load[mid] += 1
            holders.append(mid)
    return out


def _heartbeat_error(code: int, message: str) -> dict:
    return {"error_code": code, "error_message": message, "member_id": "", "member_epoch": 0,
            "heartbeat_interval_ms": 0, "status": None, "active_tasks": None, "standby_tasks": None,
            "warmup_tasks": None, "partitions_by_user_endpoint": None}


def _unsupported(req: dict) -> str | None:
    """What Kafka 4.3 refuses as not supported yet (INVALID_REQUEST): static membership (an instance id,
    even an empty one; its Streams client refuses group.instance.id with this protocol too) and warm-up
    tasks reported after joining (its assignor gives none). Task offsets and source-topic regexes, which
    it refuses as well, are served here (docs/mapping.md)."""
    if req["instance_id"] is not None:
        return "Static membership is not yet supported."
    if req["member_epoch"] != 0 and req["warmup_tasks"]:
        return "WarmupTasks are not supported yet."
    return None


class StreamsGroups(ReconcilingGroups):
    """`partition_count(topic) -> int` (0: no such topic), `topic_names() -> list` (what a source
    regex may match) and `create_topic(name, partitions, configs) -> str | None` (why it could
    not be created, or None) are how the coordinator sees and makes topics; `configs` holds the
    per-group `streams.*` configs (without it, an in-memory store whose standby default is
    `standby_replicas`, the broker's group.streams.num.standby.replicas)."""

    kind = "streams group"

    def __init__(self, partition_count, topic_names, create_topic, configs: GroupConfigs | None = None,
                 standby_replicas: int = 0) -> None:
        super().__init__()
        self.configs = configs if configs is not None else GroupConfigs(
            defaults={"streams.num.standby.replicas": str(standby_replicas)})
        self.partition_count = partition_count
        self.topic_names = topic_names
        self.create_topic = create_topic
        self.create_denied = lambda names: []  # the gateway's CREATE check (names -> the refused ones)

    def heartbeat(self, req: dict, client_id: str, client_host: str) -> dict:
        group_id, member_id, epoch = req["group_id"], req["member_id"], req["member_epoch"]
        if not group_id:
            return _heartbeat_error(INVALID_REQUEST, "GroupId can't be empty.")
        if not member_id:
            return _heartbeat_error(INVALID_REQUEST, "MemberId can't be empty.")
        if epoch == STATIC_LEAVE and req["instance_id"] is None:
            return _heartbeat_error(INVALID_REQUEST, "InstanceId can't be null.")
        unsupported = _unsupported(req)
        if unsupported:
            return _heartbeat_error(INVALID_REQUEST, unsupported)
        g = self.groups.get(group_id) or StreamsGroup(group_id)  # kept once a member joined it
        self.expire(g)
        now = trio.current_time()
        if epoch in (LEAVE, STATIC_LEAVE):
            self._remove(g, member_id)
            return {"error_code": NONE, "member_id": member_id, "member_epoch": epoch, "status": [],
                    "active_tasks": None, "standby_tasks": None, "warmup_tasks": None,
                    "partitions_by_user_endpoint": None}
        owned = req["active_tasks"]
        kinds = [req[k] is None for k in ("active_tasks", "standby_tasks", "warmup_tasks")]
        if any(kinds) and not all(kinds):
            return _heartbeat_error(INVALID_REQUEST, "If one task-type is non-null, all must be non-null.")
        if epoch != 0 and req["topology"] is not None:
            return _heartbeat_error(INVALID_REQUEST, "Topology can only be provided when (re-)joining.")
        if epoch == 0:
            m = self._join(g, req, client_id, client_host)
            if isinstance(m, dict):
                return m
            self.groups[group_id] = g
        else:
            m = g.members.get(member_id)
            if m is None:
                return _heartbeat_error(UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            reported = {(s["subtopology_id"], p) for s in owned or () for p in s["partitions"]}
            if epoch != m.epoch and not (epoch == m.previous_epoch and reported <= _owned(m)):
                return _heartbeat_error(FENCED_MEMBER_EPOCH, f"The member epoch {epoch} is not the current one "
                                                             f"({m.epoch}); the member must rejoin.")
        m.last_seen = now
        self._update(g, m, req)
        if owned is not None and m.revoking:
            reported = {(s["subtopology_id"], p) for s in owned for p in s["partitions"]}
            if not reported & _as_pairs(m.revoking):
                m.revoking = {}
        self._refresh(g)
        before = m.epoch
        self._reconcile(g, m, now)
        if m.epoch != before:
            m.previous_epoch = before
        active = _owned(m)  # never a standby of what it still runs
        m.standby = {sid: {p for p in ps if (sid, p) not in active}
                     for sid, ps in g.standby_target.get(m.member_id, {}).items()}
        current = (m.epoch, {sid: sorted(ps) for sid, ps in m.assigned.items() if ps},
                   {sid: sorted(ps) for sid, ps in m.standby.items() if ps})
        send = epoch == 0 or owned is not None or current != m.sent
        m.sent = current
        statuses = list(g.statuses)
        if m.topology_epoch < g.topology_epoch:
            statuses.append((STALE_TOPOLOGY, f"The member's topology epoch {m.topology_epoch} is older than the "
                                             f"group's ({g.topology_epoch})."))
        self._refresh_endpoints(g)
        return {"error_code": NONE, "member_id": member_id, "member_epoch": m.epoch,
                "heartbeat_interval_ms": self.configs.get_int(group_id, "streams.heartbeat.interval.ms"),
                "acceptable_recovery_lag": ACCEPTABLE_RECOVERY_LAG,
                "task_offset_interval_ms": TASK_OFFSET_INTERVAL_MS,
                "status": [{"status_code": c, "status_detail": d} for c, d in statuses],
                "active_tasks": task_list(m.assigned) if send else None,
                "standby_tasks": task_list(m.standby) if send else None, "warmup_tasks": [] if send else None,
                "endpoint_information_epoch": g.endpoint_epoch,
                "partitions_by_user_endpoint": g.endpoints if req["endpoint_information_epoch"] != g.endpoint_epoch
                else None}

    def expired(self, g: StreamsGroup, m: StreamsMember, now: float) -> bool:
        """Silent past the group's streams.session.timeout.ms, or kept revoked tasks past its rebalance timeout."""
        session_s = self.configs.get_int(g.group_id, "streams.session.timeout.ms") / 1000
        return now - m.last_seen > session_s or bool(m.revoking and now > m.revoke_deadline)

    def _join(self, g: StreamsGroup, req: dict, client_id: str, client_host: str):
        """The new member (epoch 0), or an error answer."""
        topology = req["topology"]
        if req["rebalance_timeout_ms"] == -1:
            return _heartbeat_error(INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if topology is None or not topology["subtopologies"]:
            return _heartbeat_error(STREAMS_INVALID_TOPOLOGY if topology is not None else INVALID_REQUEST,
                                    "Topology must be set and non-empty in the first request.")
        if not req["process_id"]:
            return _heartbeat_error(INVALID_REQUEST, "ProcessId can't be empty.")
        for kind, field in (("ActiveTasks", "active_tasks"), ("StandbyTasks", "standby_tasks"),
                            ("WarmupTasks", "warmup_tasks")):
            if req[field] is None or req[field]:  # as Kafka: an empty list, not null
                return _heartbeat_error(INVALID_REQUEST, f"{kind} must be empty when (re-)joining.")
        if g.topology is None or not g.members or topology["epoch"] > g.topology_epoch:
            g.topology, g.topology_epoch = topology, topology["epoch"]
            g.epoch += 1
        self._remove(g, req["member_id"])  # rejoining from scratch: it gave up everything it had
        m = g.members[req["member_id"]] = StreamsMember(req["member_id"], None, req["rack_id"], client_id,
                                                        client_host, [], topology_epoch=topology["epoch"])
        g.epoch += 1
        return m

    def _update(self, g: StreamsGroup, m: StreamsMember, req: dict) -> None:
        """What a heartbeat may change about its member (null fields: unchanged)."""
        if req["rebalance_timeout_ms"] > 0:
            m.rebalance_ms = req["rebalance_timeout_ms"]
        if req["process_id"]:
            m.process_id = req["process_id"]
        if req["rack_id"] is not None:
            m.rack_id = req["rack_id"]
        if req["user_endpoint"] is not None:
            m.endpoint = dict(req["user_endpoint"])
        if req["client_tags"] is not None:
            m.client_tags = {kv["key"]: kv["value"] for kv in req["client_tags"]}
        if req["task_offsets"] is not None:
            m.task_offsets = req["task_offsets"]
        if req["task_end_offsets"] is not None:
            m.task_end_offsets = req["task_end_offsets"]
        if req["shutdown_application"]:
            g.shutdown = True  # every member is told to shut down (until the group is empty)

    def _refresh(self, g: StreamsGroup) -> None:
        """Configure the topology against the topics (creating missing internal ones) and recompute
        the target assignment when the group changed."""
        statuses, tasks = [], {}
        if g.topology is not None:
            cfg = configure(g.topology, self.partition_count, self.topic_names)
            g.sub_topics = cfg.sub_topics
            if cfg.missing:
                statuses.append((MISSING_SOURCE_TOPICS, f"Source topics {', '.join(sorted(cfg.missing))} are missing."))
            else:
                uncreated, wrong = [], []
                absent = [name for name in sorted(cfg.internal) if self.partition_count(name) == 0]
                denied = self.create_denied(absent) if absent else []
                if denied:  # none is created; Kafka's words
                    statuses.append((MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {', '.join(absent)}; "
                                     f"Unauthorized to CREATE on topics {', '.join(denied)}."))
                for name, (n, configs) in sorted(cfg.internal.items()):
                    have = self.partition_count(name)
                    if have == 0 and denied:
                        uncreated.append(name)
                    elif have == 0:
                        why = self.create_topic(name, n, configs)
                        if why:
                            uncreated.append(f"{name} ({why})")
                    elif have != n:
                        wrong.append(f"{name} has {have} partitions, expected {n}")
                if uncreated and not denied:
                    statuses.append((MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {'; '.join(uncreated)}"))
                if wrong:
                    statuses.append((INCORRECTLY_PARTITIONED_TOPICS, "; ".join(wrong)))
                if not uncreated and not wrong:
                    tasks = {sid: n for sid, n in cfg.tasks.items() if n > 0}
                    g.internal = {name: n for name, (n, _c) in cfg.internal.items()}
        if g.shutdown and g.members:
            statuses.append((SHUTDOWN_APPLICATION, "A member requested the shutdown of the whole application."))
        g.shutdown = g.shutdown and bool(g.members)
        if tasks != g.tasks:
            g.tasks = tasks
            g.epoch += 1
        for m in g.members.values():
            m.topics = sorted(tasks)  # every member runs the one topology: any task may go anywhere
        replicas = self.configs.get_int(g.group_id, "streams.num.standby.replicas")
        self._retarget(g, tasks, statuses)
        g.statuses = statuses
        if replicas != g.standby_replicas:  # a new target, or the config changed: the standbys follow
            g.standby_target = standby_target(g, replicas)
            g.standby_replicas = replicas

    def _retarget(self, g: StreamsGroup, tasks: dict, statuses: list) -> None:
        """A new target assignment when the group changed, unless Kafka 4.3's delays hold it back (the
        ASSIGNMENT_DELAYED status says which): a new group's first target waits
        `streams.initial.rebalance.delay.ms` from its first heartbeat (its members are at the group
        epoch meanwhile, with no task, as on Kafka), a later one `streams.assignment.interval.ms`
        after the previous one."""
        now = trio.current_time()
        if g.first_assignment_at is None:
            g.first_assignment_at = now + self.configs.get_int(g.group_id, "streams.initial.rebalance.delay.ms") / 1000
        if now < g.first_assignment_at:
            statuses.append((ASSIGNMENT_DELAYED, INITIAL_DELAY))
            if g.epoch > g.assignment_epoch:
                g.target, g.assignment_epoch, g.standby_replicas = {}, g.epoch, -1
            g.held = True
            return
        if g.held:  # the delay is over: the first real target, at a new epoch
            g.held = False
            g.epoch += 1
        if g.epoch <= g.assignment_epoch:
            return
        if now < g.assigned_at + self.configs.get_int(g.group_id, "streams.assignment.interval.ms") / 1000:
            statuses.append((ASSIGNMENT_DELAYED, INTERVAL_DELAY))
            return
        g.target = compute_target(g, tasks)
        g.assignment_epoch, g.assigned_at, g.standby_replicas = g.epoch, now, -1

    def _refresh_endpoints(self, g: StreamsGroup) -> None:
        """PartitionsByUserEndpoint (interactive queries): the input partitions each endpoint's active
        tasks own; its epoch moves when it changes."""
        out = []
        for m in sorted(g.members.values(), key=lambda m: m.member_id):
            if m.endpoint is None:
                continue
            parts: dict = {}
            for sid, ps in m.assigned.items():
                for t in g.sub_topics.get(sid, ()):
                    parts.setdefault(t, set()).update(ps)
            out.append({"user_endpoint": m.endpoint, "standby_partitions": [], "active_partitions": [
                {"topic": t, "partitions": sorted(ps)} for t, ps in sorted(parts.items())]})
        if out != g.endpoints:
            g.endpoints = out
            g.endpoint_epoch += 1
