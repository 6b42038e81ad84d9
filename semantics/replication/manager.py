"""The replica manager of one gateway: the role of every replicated queue, and the leader's side of
replication (Kafka's ReplicaManager + Partition): each follower's fetched offset, the in-sync set,
the high watermark, and the hooks the write and read paths call.

A queue with no role is not replicated: every hook is a no-op for it (one dict lookup), so a single
gateway works and performs exactly as before. The follower side (copying from the leader) is
`semantics.replication.follower`, started by `run`.
"""
from __future__ import annotations

import dataclasses
import logging
import time

import trio

from semantics.replication.contract import (FENCED_LEADER_EPOCH, NONE, NOT_LEADER, OFFSET_OUT_OF_RANGE,
                                            UNKNOWN_LEADER_EPOCH, FetchRequest, NodeAddress, NotLeader,
                                            StaleEpoch)
from semantics.replication.epochs import LeaderEpochCache

log = logging.getLogger("rocketgate.replication")
LEADER, FOLLOWER = "leader", "follower"
DEFAULT_LAG_TIME_MS = 30_000  # Kafka's replica.lag.time.max.ms
FENCE_CHECK_S = 0.1  # how often a waiting acks=all produce checks whether this node fenced itself


@dataclasses.dataclass(slots=True)
class FollowerProgress:
    fetched: int = 0  # the follower holds every offset below this
    caught_up_at: float = 0.0  # monotonic time it last fetched at (or past) the leader's log end
    end_at_last_fetch: int = 0  # the leader's log end when the follower fetched before


@dataclasses.dataclass(slots=True)
class QueueRole:
    role: str
    epoch: int
    leader: NodeAddress
    replicas: list = dataclasses.field(default_factory=list)  # followers (leader side)
    followers: dict = dataclasses.field(default_factory=dict)  # NodeAddress -> FollowerProgress
    isr: set = dataclasses.field(default_factory=set)  # in-sync followers (the leader is always in)
    accepted_isr: set = dataclasses.field(default_factory=set)  # the followers in the set etcd holds
    high_watermark: int = 0
    fenced: bool = False  # a leader told of a newer epoch: refuses writes until reassigned
    generation: int = 0  # bumped on every role change: a follower task of an older one stops
    progress: trio.Event = dataclasses.field(default_factory=trio.Event)  # set when the HW may have moved
    pending_isr: set = dataclasses.field(default_factory=set)  # followers of a set being written to etcd


class ReplicaManager:
    def __init__(self, store, self_id: NodeAddress, lag_time_ms: int = DEFAULT_LAG_TIME_MS,
                 on_isr_change=None, notify=None, on_leader=None, clock=time.monotonic) -> None:
        self.store = store
        self.self_id = self_id
        self.lag_time = lag_time_ms / 1000
        self.epochs = LeaderEpochCache(store)
        self.on_isr_change = on_isr_change  # (topic, queue_id, isr: list[NodeAddress]); the cluster layer persists it
        self.notify = notify  # (topic, queue_id): wake readers when the high watermark moves
        self.on_leader = on_leader  # (topic, queue_id): this node now leads the queue (rebuild producer state)
        self.clock = clock
        self.node_fenced = lambda: False  # the cluster layer's: this node's lease may have expired
        self.roles: dict[tuple[str, int], QueueRole] = {}
        self.follower = None  # semantics.replication.follower.Follower, set by the App
        # what derives state from a queue's entries (appended / truncate / forget_queue: Kafka's transaction
        # layout in a cluster, docs/cluster-txn-layout.md); None: nothing does
        self.derive = None

    # ------------------------------------------------------------------ role changes (the cluster layer)

    def _check_epoch(self, key, epoch: int) -> int:
        known = max(self.epochs.latest_epoch(*key), self.roles[key].epoch if key in self.roles else -1)
        if epoch < known:
            raise StaleEpoch(f"{key[0]}/{key[1]}: epoch {epoch} is older than {known}")
        old = self.roles.get(key)
        return old.generation + 1 if old else 1

    def become_leader(self, topic: str, queue_id: int, epoch: int, replicas: list[NodeAddress],
                      isr: list[NodeAddress] | None = None) -> None:
        """Lead the queue from now on in `epoch`, replicated to `replicas` (the other nodes); `isr`
        (default: all of them) are the ones acks=all waits for until they fall behind."""
        key = (topic, queue_id)
        generation = self._check_epoch(key, epoch)
        old = self.roles.get(key)
        end = self.store.max_offset(topic, queue_id)
        self.epochs.assign(topic, queue_id, epoch, end)
        followers = [r for r in replicas if r != self.self_id]
        in_sync = set(followers if isr is None else [r for r in isr if r in followers])
        now = self.clock()
        state = QueueRole(LEADER, epoch, self.self_id, followers,
                          {r: FollowerProgress(0, now, end) for r in followers}, in_sync, set(in_sync),
                          min(old.high_watermark, end) if old else end, generation=generation)
        self._replace(key, state)
        log.info("%s/%d: leader in epoch %d from offset %d, replicas %s, isr %s", topic, queue_id, epoch, end,
                 followers, sorted(in_sync))
        if self.on_leader is not None:
            self.on_leader(topic, queue_id)

    def become_follower(self, topic: str, queue_id: int, epoch: int, leader: NodeAddress) -> None:
        """Copy the queue from `leader` (epoch `epoch`); writes to it are refused here from now on."""
        key = (topic, queue_id)
        generation = self._check_epoch(key, epoch)
        old = self.roles.get(key)
        hw = min(old.high_watermark, self.store.max_offset(topic, queue_id)) if old else 0
        self._replace(key, QueueRole(FOLLOWER, epoch, leader, high_watermark=hw, generation=generation))
        log.info("%s/%d: follower of %s in epoch %d", topic, queue_id, leader, epoch)
        if self.follower is not None:
            self.follower.start(topic, queue_id)

    def stop_replica(self, topic: str, queue_id: int) -> None:
        """The queue is no longer replicated here (unassigned): it reads and writes as a plain queue."""
        old = self.roles.get((topic, queue_id))
        self._replace((topic, queue_id), None)
        if old is not None and old.role == FOLLOWER and self.on_leader is not None:
            self.on_leader(topic, queue_id)  # written here from now on: batches it copied count

    def _replace(self, key, state: QueueRole | None) -> None:
        old = self.roles.pop(key, None)
        if state is not None:
            self.roles[key] = state
        if old is not None:
            old.progress.set()  # writers waiting on the old role give up, follower tasks stop

    def role(self, topic: str, queue_id: int) -> QueueRole | None:
        return self.roles.get((topic, queue_id))

    def replicates(self, topic: str, queue_id: int) -> bool:
        """Whether the queue has a role here (the hooks below do something for it)."""
        return bool(self.roles) and (topic, queue_id) in self.roles

    # ------------------------------------------------------------------ hooks of the write and read paths

    def write_refusal(self, topic: str, queue_id: int) -> str | None:
        """Why a client write to the queue is refused here (NOT_LEADER), None when it may be appended."""
        r = self.roles.get((topic, queue_id)) if self.roles else None
        if r is None or (r.role == LEADER and not r.fenced):
            return None
        return NOT_LEADER

    def readable_end(self, topic: str, queue_id: int, log_end: int) -> int:
        """The offset consumers may read up to: the high watermark of a replicated queue."""
        r = self.roles.get((topic, queue_id)) if self.roles else None
        if r is None:
            return log_end
        if r.role == LEADER:
            return self._advance(topic, queue_id, r)
        return min(r.high_watermark, log_end)

    async def wait_replicated(self, topic: str, queue_id: int, end_offset: int) -> None:
        """acks=all / SYNC_MASTER: return once every in-sync replica holds the offsets below
        `end_offset` (at once on a queue that is not replicated). Raises NotLeader if this node
        stops leading the queue, or is fenced, or fences itself (its lease may have expired: another
        node may be elected from etcd's in-sync set) first."""
        r = self.roles.get((topic, queue_id)) if self.roles else None
        if r is None:
            return
        while True:
            if r.role != LEADER or r.fenced or self.roles.get((topic, queue_id)) is not r:
                raise NotLeader(f"{topic}/{queue_id}: no longer the leader")
            if self.node_fenced():
                raise NotLeader(f"{topic}/{queue_id}: this node is fenced (its lease may have expired)")
            if self._advance(topic, queue_id, r) >= end_offset:
                return
            event = r.progress
            with trio.move_on_after(FENCE_CHECK_S):  # fencing itself sets no event
                await event.wait()

    # ------------------------------------------------------------------ the leader's side of a fetch

    def check_leader_epoch(self, topic: str, queue_id: int, epoch: int) -> str:
        """NONE if this node leads the queue in `epoch` (a replica's request); else the error. A
        newer epoch means a newer leader exists: this one is fenced and refuses writes from now on."""
        r = self.roles.get((topic, queue_id))
        if r is None or r.role != LEADER:
            return NOT_LEADER
        if epoch < r.epoch:
            return FENCED_LEADER_EPOCH
        if epoch > r.epoch:
            if not r.fenced:
                log.warning("%s/%d: a replica asks in epoch %d > ours (%d): fenced, refusing writes",
                            topic, queue_id, epoch, r.epoch)
                r.fenced = True
                event, r.progress = r.progress, trio.Event()
                event.set()
            return UNKNOWN_LEADER_EPOCH
        return NONE

    def on_fetch(self, req: FetchRequest) -> tuple[str, QueueRole | None]:
        """Validate a follower's fetch and record its position; (error, role)."""
        key = (req.topic, req.queue_id)
        r = self.roles.get(key)
        error = self.check_leader_epoch(req.topic, req.queue_id, req.epoch)
        if error != NONE:
            return error, r
        end = self.store.max_offset(*key)
        if req.offset > end or req.offset < self.store.min_offset(*key):  # below: the follower starts at ours
            return OFFSET_OUT_OF_RANGE, r
        p = r.followers.get(req.replica)
        if p is None:  # a replica the assignment did not name: served, never in sync
            return NONE, r
        now = self.clock()
        if req.offset >= end or req.offset >= p.end_at_last_fetch:
            p.caught_up_at = now
        p.fetched, p.end_at_last_fetch = req.offset, end
        if req.replica not in r.isr and req.offset >= self._advance(req.topic, req.queue_id, r) and \
                now - p.caught_up_at < self.lag_time:
            r.isr.add(req.replica)
            self._isr_changed(req.topic, req.queue_id, r, "caught up")
        self._advance(req.topic, req.queue_id, r)
        return NONE, r

    def _advance(self, topic: str, queue_id: int, r: QueueRole) -> int:
        """Move the leader's high watermark to the lowest log end among the in-sync replicas: those
        of the local set, of the set etcd accepted and of a set being written to it (KIP-497's
        "maximal" set: a shrink counts only once etcd holds it, and an expansion from the moment it
        is sent, since a new leader is elected from etcd's set). A fenced node never moves it."""
        if self.node_fenced():
            return r.high_watermark
        hw = self.store.max_offset(topic, queue_id)
        for replica in r.isr | r.accepted_isr | r.pending_isr:
            hw = min(hw, r.followers[replica].fetched)
        if hw > r.high_watermark:
            r.high_watermark = hw
            event, r.progress = r.progress, trio.Event()
            event.set()
            if self.notify is not None:
                self.notify(topic, queue_id)
        return r.high_watermark

    def shrink_isr(self) -> None:
        """Drop from every led queue's ISR the followers that have not caught up for the lag time."""
        now = self.clock()
        for (topic, qid), r in list(self.roles.items()):
            if r.role != LEADER or not r.isr:
                continue
            end = self.store.max_offset(topic, qid)
            lagging = [f for f in r.isr if r.followers[f].fetched < end
                       and now - r.followers[f].caught_up_at >= self.lag_time]
            if lagging:
                r.isr.difference_update(lagging)
                self._isr_changed(topic, qid, r, f"{lagging} fell behind")
                self._advance(topic, qid, r)

    def _isr_changed(self, topic: str, queue_id: int, r: QueueRole, why: str) -> None:
        isr = sorted([self.self_id, *r.isr])
        log.info("%s/%d: ISR %s (%s)", topic, queue_id, isr, why)
        if self.on_isr_change is not None:
            self.on_isr_change(topic, queue_id, isr)
        else:  # nobody persists it (tests of the manager alone): accepted at once
            r.accepted_isr = set(r.isr)

    def isr_accepted(self, topic: str, queue_id: int, epoch: int, isr: list[NodeAddress]) -> None:
        """etcd now holds `isr` as the queue's in-sync set in `epoch`: a shrink to it counts for the
        high watermark from now on."""
        r = self.roles.get((topic, queue_id))
        if r is None or r.role != LEADER or r.epoch != epoch:
            return
        r.accepted_isr, r.pending_isr = {a for a in isr if a in r.followers}, set()
        self._advance(topic, queue_id, r)

    def isr_pending(self, topic: str, queue_id: int, epoch: int, isr: list[NodeAddress]) -> None:
        """`isr` is on its way to etcd (or its write failed and may have landed): its followers count
        for the high watermark until a later set is accepted (seed 2612: a set written before its
        follower fell behind landed after, and that follower was elected without the records)."""
        r = self.roles.get((topic, queue_id))
        if r is not None and r.role == LEADER and r.epoch == epoch:
            r.pending_isr = {a for a in isr if a in r.followers}

    # ------------------------------------------------------------------ the service

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Checks the ISRs every quarter of the lag time, and runs the follower tasks."""
        async with trio.open_nursery() as nursery:
            if self.follower is not None:
                await nursery.start(self.follower.run)
            task_status.started()
            while True:
                await trio.sleep(max(self.lag_time / 4, 0.05))
                self.shrink_isr()
