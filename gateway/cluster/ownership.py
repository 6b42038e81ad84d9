"""Which queues this gateway serves (`app.ownership`): `SingleNode` (no --cluster: it owns
everything, the handlers' single-process paths stay as they were) or `ClusterNode` (a member of an
etcd-coordinated cluster: it owns the queues whose leader it is, per `cluster.view`).

Local topics: RocketMQ's own topics (schedule, transaction half/op, TBW102, `%RETRY%`/`%DLQ%`
of every group, RMQ_SYS_*) are not assigned in etcd; every gateway has its own copy and serves it,
as every RocketMQ broker has its own (docs/cluster.md)."""
from __future__ import annotations

import dataclasses
import logging
import math
import time
import uuid

import trio

from cluster import model
from cluster.etcd import EtcdError
from cluster.model import Member, QueueAssignment, TopicRecord
from semantics.producer_state import ClusterUnavailable
from semantics.views import ATTR_SOURCE

log = logging.getLogger("rocketgate.cluster")

LOCAL_PREFIXES = ("RMQ_SYS_", "SCHEDULE_TOPIC_", "TBW102", "%RETRY%", "%DLQ%", "rmq_sys_", "__")
PRODUCER_ID_BLOCK = 1000
ETCD_RETRY_DELAY = 1.0  # between tries of a topic change etcd did not take (unreachable)


def is_local_topic(name: str) -> bool:
    return name.startswith(LOCAL_PREFIXES)


DLQ_PREFIX = "%DLQ%"


class SingleNode:
    """One process, no cluster: this gateway leads every queue."""

    clustered = False
    node_id = 0
    broker_name = None  # the remoting side's own (broker-a)

    def owns(self, topic: str, queue_id: int) -> bool:
        return True

    def fenced(self) -> bool:
        return False

    def expect_topic(self, name: str, replication_factor: int) -> None:
        return None

    def topic_grown(self, cfg) -> None:
        return None

    async def grown(self, names, timeout: float = 5.0) -> None:
        return None

    async def reserve_producer_ids(self) -> None:
        return None

    async def published(self, names, timeout: float = 5.0) -> list[str]:
        return []

    def creating(self, name: str) -> bool:
        return False


SINGLE_NODE = SingleNode()


WHOLE_TYPES = ("LITE", "PRIORITY")


def led_whole(attributes) -> bool:
    """Whether a topic's queues all go to one leader, the live member with the lowest node id (under
    `--shards`, shard 0: the bootstrap ports' shard, whose gRPC endpoint also takes the SDKs' lite
    subscriptions): a LITE topic (a lite topic's queue is a hash over all the parent's queues, and
    its subscriptions pop there) and a PRIORITY topic (a POP reads its queues highest first, one
    order across them). Spread over gateways, a lite topic sent to one would be popped at another
    and priorities would be ordered per gateway only; led by one, both behave as on one gateway.
    Not the creating gateway: `mqadmin updateTopic -c` creates on every broker at once."""
    return (attributes or {}).get("message.type") in WHOLE_TYPES


def clustered(app) -> bool:
    """Whether `app` is a cluster member (an app made without an ownership, as some tests build, is not)."""
    return getattr(getattr(app, "ownership", SINGLE_NODE), "clustered", False)


class ClusterNode:
    """This gateway as a cluster member. Reads are synchronous, from the watched view; writes
    to etcd run as tasks in the cluster service's nursery (`gateway.cluster.service`)."""

    clustered = True

    def __init__(self, member: Member, coordination, view, default_replication_factor: int,
                 whole_dlq: bool = False) -> None:
        self.member = member
        # the shards of --shards: %DLQ% topics are cluster topics led whole (gateway.cluster.dead_letters)
        self.whole_dlq = whole_dlq
        self.node_id = member.node_id
        self.broker_name = f"broker-{member.node_id}"  # as gateway.cluster.routes names it
        self.coordination = coordination
        self.view = view
        self.default_replication_factor = default_replication_factor
        self.nursery: trio.Nursery | None = None  # set by the cluster service
        self.router = None  # where messages for queues led elsewhere go (gateway.cluster.delivery), by the service
        self.lease = 0  # this member's etcd lease (gateway.cluster.service)
        self.lease_deadline = math.inf  # time.monotonic() after which the lease may have expired
        self.clock = time.monotonic  # never the wall clock: a jump of it must not fence (or unfence)
        self._requested_rf: dict[str, int] = {}
        self.pending: list = []  # etcd writes asked for before the cluster service started
        self._producer_ids: list[int] = []  # the rest of this gateway's block, in reverse
        self._publishing: dict[str, trio.Event] = {}  # topics being written to etcd
        self._growing: dict[str, trio.Event] = {}  # topics whose new queues are being written to etcd

    # --- reads (handlers) ---
    def local(self, name: str) -> bool:
        """A topic every gateway has its own copy of, never in etcd (the module's docstring)."""
        return is_local_topic(name) and not self._whole_dlq(name)

    def _whole_dlq(self, name: str) -> bool:
        return self.whole_dlq and name.startswith(DLQ_PREFIX)

    def assignment(self, topic: str, queue_id: int) -> QueueAssignment | None:
        return self.view.queues.get((topic, queue_id))

    def assigned(self, topic: str) -> bool:
        return topic in self.view.topics

    def owns(self, topic: str, queue_id: int) -> bool:
        """Leads the queue and may serve it: not while fenced (below)."""
        a = self.view.queues.get((topic, queue_id))
        if a is None:
            return topic not in self.view.topics  # a local topic
        return a.leader == self.node_id and not self.fenced()

    def fenced(self) -> bool:
        """Whether this member's lease can have expired in etcd (it was not renewed in time): then
        another member may be elected for the queues this one leads, so it refuses their requests
        until a renewed (or new) lease and a fresh view say it still leads them."""
        return self.clock() >= self.lease_deadline

    def live(self) -> dict[int, Member]:
        return self.view.members

    def coordinator(self, key: str) -> Member:
        """The member that coordinates group / transactional id `key` (this one when alone)."""
        node = model.coordinator_of(key, self.view.live())
        return self.view.members.get(node, self.member)

    # --- topic creation ---
    def expect_topic(self, name: str, replication_factor: int) -> None:
        """The topic about to be created asked for this replication factor (Kafka CreateTopics)."""
        if replication_factor > 0:
            self._requested_rf[name] = replication_factor

    def topic_created(self, cfg, replication_factor: int | None = None, members: list[int] | None = None) -> None:
        """A topic was created in the local store (any protocol); publish its placement unless it is
        a local topic or already in etcd. The view has it at once; etcd gets it in the background
        (if another gateway created it first, the watch brings the winner's assignment). Until etcd
        has it, it is `creating`: clients are not shown it (docs/cluster.md, "Topic creation")."""
        name = cfg.name
        if self.local(name) or name in self.view.topics:
            return
        queues = max(cfg.read_queues, cfg.write_queues)
        rf = replication_factor or self._requested_rf.pop(name, None) or self.default_replication_factor
        record = TopicRecord(queues, cfg.perm, dict(cfg.attributes or {}), str(uuid.UUID(bytes=cfg.topic_id)))
        candidates = members or self.view.live() or [self.node_id]
        leader = min(candidates) if led_whole(cfg.attributes) or self._whole_dlq(name) else None
        assignments = self._base_placement(cfg, queues) or model.place(name, queues, candidates, rf, leader)
        self.view.topics[name] = record
        for q, a in enumerate(assignments):
            self.view.set_queue(name, q, a)  # this gateway takes its roles now, as the others will
        self._publishing[name] = trio.Event()
        self._spawn(self._publish, name, record, assignments)

    def _base_placement(self, cfg, queues: int) -> list[QueueAssignment] | None:
        """A filtered view's queues go where its base's are (semantics.views): a view queue's units
        point into the CommitLog of the gateway that stores the base queue, so only that one can
        fill and serve it. None for an ordinary topic."""
        base = (cfg.attributes or {}).get(ATTR_SOURCE)
        placed = [self.view.queues.get((base, q)) for q in range(queues)] if base else []
        return placed if placed and None not in placed else None

    def topic_deleted(self, name: str) -> None:
        """A topic was deleted from the local store: delete it cluster-wide (the others follow the watch)."""
        if self.local(name) or name not in self.view.topics:
            return
        self.view.topics.pop(name)
        for key in [k for k in self.view.queues if k[0] == name]:
            del self.view.queues[key]
        self._spawn(self.coordination.delete_topic, name)

    def topic_updated(self, cfg) -> None:
        """A topic's configs or perm changed here (Kafka AlterConfigs, RocketMQ topic update): put
        them in its record, which every gateway follows (`ClusterService._make_local`), so the
        leaders of its queues apply them and every gateway describes them. A change of the queue
        count is `topic_grown`'s."""
        record = self.view.topics.get(cfg.name)
        if record is None or max(cfg.read_queues, cfg.write_queues) != record.queues:
            return
        attributes = dict(cfg.attributes or {})
        if record.attributes == attributes and record.perm == cfg.perm:
            return  # unchanged, or this gateway following the record
        changed = dataclasses.replace(record, perm=cfg.perm, attributes=attributes)
        self.view.topics[cfg.name] = changed
        self._spawn(self.coordination.add_queues, cfg.name, changed, {})

    def topic_grown(self, cfg) -> None:
        """A topic got more queues here (CreatePartitions, RocketMQ topic update): place the new ones."""
        record = self.view.topics.get(cfg.name)
        queues = max(cfg.read_queues, cfg.write_queues)
        if record is None or queues <= record.queues:
            return
        first = self.view.queues.get((cfg.name, 0))
        rf = len(first.replicas) if first is not None else self.default_replication_factor
        whole = led_whole(cfg.attributes) or self._whole_dlq(cfg.name)
        leader = first.leader if first is not None and whole else None
        placed = model.place(cfg.name, queues, self.view.live() or [self.node_id], rf, leader)
        new = {q: placed[q] for q in range(record.queues, queues)}
        grown = dataclasses.replace(record, queues=queues)
        self.view.topics[cfg.name] = grown
        for q, a in new.items():
            self.view.set_queue(cfg.name, q, a)
        done = self._growing[cfg.name] = trio.Event()
        self._spawn(self._grow, cfg.name, grown, new, done)

    async def _grow(self, name: str, grown: TopicRecord, new: dict, done: trio.Event) -> None:
        await self.coordination.add_queues(name, grown, new)
        done.set()
        if self._growing.get(name) is done:
            del self._growing[name]

    async def grown(self, names, timeout: float = 5.0) -> None:
        """Wait until these topics' growth here is in etcd, which every gateway follows: CreatePartitions
        is answered then, so a client asking another gateway (shard) right after sees the new count."""
        with trio.move_on_after(timeout):
            for name in names:
                event = self._growing.get(name)
                if event is not None:
                    await event.wait()

    async def _publish(self, name: str, record: TopicRecord, assignments: list) -> None:
        """Retried while etcd does not answer (`_retried`): `creating` until it has taken it."""
        if not await self.coordination.create_topic(name, record, assignments):
            log.info("cluster: topic %s was created elsewhere first; following its assignment", name)
            await self.view.load()
        self._publishing.pop(name, trio.Event()).set()

    async def published(self, names, timeout: float = 5.0) -> list[str]:
        """Wait until these topics' creation here is in etcd (or lost to another gateway's), so a
        client told "created" finds them on every gateway instead of auto-creating them elsewhere.
        Returns those etcd does not have yet (still retried): not to be answered as created."""
        with trio.move_on_after(timeout):
            for name in names:
                event = self._publishing.get(name)
                if event is not None:
                    await event.wait()
        return [name for name in names if self.creating(name)]

    def creating(self, name: str) -> bool:
        """Whether this gateway created the topic and etcd does not have it yet: then no client is
        shown it (Metadata, routes, listings, produce), since etcd may never take it (a reload
        from etcd would withdraw it) and a client told it exists must not see it vanish."""
        return name in self._publishing

    def _spawn(self, fn, *args) -> None:
        """Run `fn(*args)` in the cluster service (kept until it starts), retried while etcd is
        unreachable: a topic created during an etcd outage must not end the gateway."""
        if self.nursery is None:
            self.pending.append((_retried, (fn, *args)))
        else:
            self.nursery.start_soon(_retried, fn, *args)

    # --- producer ids ---
    async def reserve_producer_ids(self) -> None:
        """Make sure `next_producer_id` has an id at hand (a block from etcd when out; ClusterUnavailable
        while etcd cannot be reached: the request is answered with a retriable error)."""
        if not self._producer_ids:
            try:
                block = await self.coordination.allocate_producer_ids(PRODUCER_ID_BLOCK)
            except EtcdError as exc:
                raise ClusterUnavailable(f"no producer id block: etcd: {exc}") from None
            self._producer_ids = list(reversed(block))

    def next_producer_id(self) -> int:
        """The ProducerState's id source: an id of this gateway's block, never handed out twice in
        the cluster (a restart takes a new block; the rest of the old one is never used)."""
        if not self._producer_ids:
            raise RuntimeError("no producer id reserved (reserve_producer_ids first)")
        return self._producer_ids.pop()


async def _retried(fn, *args) -> None:
    """`await fn(*args)`, again every ETCD_RETRY_DELAY while etcd is unreachable."""
    failures = 0
    while True:
        try:
            await fn(*args)
            return
        except EtcdError as exc:
            failures += 1
            if failures == 1:
                log.warning("cluster: %s of %s not in etcd yet (%s); retrying", fn.__name__, args[0], exc)
            await trio.sleep(ETCD_RETRY_DELAY)
