"""Joining the cluster at start (`join`, before the store opens: a node id held by a live gateway
or a data dir of another node id stops the start) and the cluster service of a member: lease
keep-alive, the view's watch, topics created elsewhere made in the local store, the lease
revoked at shutdown so the others see this gateway leave at once."""
from __future__ import annotations

import functools
import logging
import os
import time

import trio

from cluster.coordination import Coordination, NodeIdTaken, fence_margin
from cluster.etcd import Etcd, EtcdError
from cluster.model import Member
from cluster.view import ClusterView
from gateway.cluster.delivery import LeaderRouter, leads
from gateway.cluster.group_configs import PREFIX as GROUP_CONFIGS, SharedGroupConfigs
from gateway.cluster.share_offsets import ShareOffsets
from gateway.diskless_delivery import route_due_messages
from gateway.cluster.offsets import OffsetMirror
from gateway.cluster.ownership import ClusterNode
from gateway.cluster.replicas import ReplicaRoles
from gateway.cluster import txn_layout, txn_snapshots
from gateway.cluster.shared_security import SharedSecurity
from gateway.cluster.txns import ClusterTxns
from semantics.replication.pop_journal import journal_topic
from semantics.views import definition
from store.config import legacy_topic_id, parse_topic_id

log = logging.getLogger("rocketgate.cluster")

NODE_ID_FILE = "cluster-node-id"
LEAVE_TIMEOUT = 3.0
PUBLISH_TIMEOUT = 60.0  # for the topics of a data dir made before joining to be in etcd


class JoinError(Exception):
    """The gateway may not join (the message says why)."""


def check_data_dir(data_dir: str, node_id: int) -> None:
    """The data dir belongs to one node id: written at the first start, checked at every other."""
    path = os.path.join(data_dir, NODE_ID_FILE)
    try:
        with open(path, encoding="ascii") as f:
            owner = int(f.read().strip())
    except FileNotFoundError:
        owner = None
    except (OSError, ValueError) as exc:
        raise JoinError(f"cannot read {path}: {exc}") from None
    if owner is not None and owner != node_id:
        raise JoinError(f"data dir {data_dir!r} belongs to node id {owner}, not {node_id}")


def claim_data_dir(data_dir: str, node_id: int) -> None:
    path = os.path.join(data_dir, NODE_ID_FILE)
    if not os.path.exists(path):
        with open(path + ".tmp", "w", encoding="ascii") as f:
            f.write(f"{node_id}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)


async def join(config) -> ClusterNode:
    """Register this gateway (its advertised address and ports) under a lease and load the cluster
    state; JoinError when it may not."""
    check_data_dir(config.data_dir, config.node_id)
    etcd = Etcd.from_url(config.cluster)
    coordination = Coordination(etcd)
    member = Member(config.node_id, config.advertised, config.kafka_port, config.remoting_port,
                    config.grpc_port or 0, config.schema_registry_port or 0)
    try:
        asked = time.monotonic()
        lease = await coordination.register(member, config.cluster_lease_ttl)
        view = ClusterView(coordination)
        await view.load()
    except (NodeIdTaken, EtcdError) as exc:
        await etcd.aclose()
        raise JoinError(str(exc)) from None
    claim_data_dir(config.data_dir, config.node_id)
    node = ClusterNode(member, coordination, view, config.default_replication_factor, config.whole_dlq)
    node.lease = lease
    node.lease_deadline = asked + config.cluster_lease_ttl - fence_margin(config.cluster_lease_ttl)
    log.info("cluster: joined as node %d (%s), live members %s", member.node_id, config.cluster, view.live())
    return node


class ClusterService:
    """The background service of a member (after `join`)."""

    def __init__(self, app) -> None:
        self.app = app
        self.node: ClusterNode = app.ownership

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        node, ttl = self.node, self.app.config.cluster_lease_ttl
        # due delayed and committed messages go to their queue's current leader (gateway.cluster.delivery)
        node.router = LeaderRouter(node, self.app.config)  # also forwards gRPC sends (gateway.grpc.forward)
        route_due_messages(self.app, node.router, functools.partial(leads, node))
        snapshots = None
        if getattr(self.app, "kafka", None) is not None:  # Kafka transactions over etcd (gateway.cluster.txns)
            self.app.kafka.cluster_txns = ClusterTxns(self.app, node)
            self.app.transactions.checkers["kafka"] = self.app.kafka.cluster_txns.check
            if txn_layout.enabled(self.app):  # every replica derives the transaction state from its log
                snapshots = txn_layout.install(self.app)
        try:
            async with trio.open_nursery() as nursery:
                node.nursery = nursery
                for fn, args in node.pending:
                    nursery.start_soon(fn, *args)
                node.pending.clear()
                if self.app.config.shared_security and self.app.authentication is not None:  # one set of users
                    config_dir = os.path.join(self.app.store.path, "config")
                    await nursery.start(SharedSecurity(node.coordination.etcd, config_dir, self.app.authentication).run)
                if getattr(self.app, "kafka", None) is not None:  # one set of group configs (share.*, streams.*)
                    shared = SharedGroupConfigs(self.app.kafka.group_configs, node.coordination.etcd)
                    node.view.on_key(GROUP_CONFIGS, shared.follow)
                    try:
                        await shared.load()
                    except EtcdError as exc:  # the watch brings later changes; this start keeps the local file
                        log.warning("cluster: group configs not loaded from etcd: %s", exc)
                    self.app.kafka.shared_group_configs = shared
                    self.app.kafka.share_offsets = ShareOffsets(self.app)  # share state at each partition's leader
                node.view.on_topic(self._make_local)
                for name, record in list(node.view.topics.items()):
                    self._make_local(name, record)
                published = self._publish_unassigned()
                # in etcd before the view is loaded again: a load drops (and the store deletes) a topic etcd lacks
                await node.published(published, timeout=PUBLISH_TIMEOUT)
                mirror = OffsetMirror(self.app.offsets, node.coordination, node.view)
                mirror.install()
                await node.view.load()  # again, now that the offsets are heard
                mirror.publish(published)  # their offsets too (a one-process store moved into shards)
                await nursery.start(mirror.run)
                ReplicaRoles(node, self.app.replication, nursery, pop=self.app.pop).install()
                await nursery.start(node.view.run)
                if getattr(self.app, "kafka", None) is not None:  # decided ends a lost coordinator left
                    nursery.start_soon(self.app.kafka.cluster_txns.completions.sweep)
                if snapshots is not None:  # the derived transaction state's snapshots (txn_snapshots)
                    nursery.start_soon(txn_snapshots.keep, self.app, snapshots, txn_layout.forget_old_marks)
                nursery.start_soon(lambda: node.coordination.keep_alive(
                    node.lease, ttl, on_lost=self._rejoin, on_renewed=self._renewed))
                nursery.start_soon(self._report_fencing)
                task_status.started()
        finally:
            node.nursery = None
            with trio.CancelScope(shield=True), trio.move_on_after(LEAVE_TIMEOUT):
                try:
                    await node.coordination.deregister(node.lease)
                    log.info("cluster: node %d left", node.node_id)
                except EtcdError as exc:
                    log.warning("cluster: leaving failed (%s); the lease expires in %d s", exc, ttl)
                await node.coordination.etcd.aclose()

    def _renewed(self, expires: float) -> None:
        """The lease was refreshed: it cannot expire before `expires`; serve until a margin before."""
        self.node.lease_deadline = expires - fence_margin(self.app.config.cluster_lease_ttl)

    async def _rejoin(self) -> int:
        """The lease expired (etcd unreachable too long): register again, retrying until it works.
        Fenced meanwhile; unfenced only after the view is reloaded, so this gateway serves the
        queues it still leads (another member was elected for the rest while it was away)."""
        node, ttl = self.node, self.app.config.cluster_lease_ttl
        node.lease_deadline, node.lease, asked = 0.0, 0, 0.0
        while True:
            try:
                if not node.lease:
                    asked = time.monotonic()
                    node.lease = await node.coordination.register(node.member, ttl)
                await node.view.load()
                break
            except (NodeIdTaken, EtcdError) as exc:
                log.error("cluster: cannot register again: %s", exc)
                await trio.sleep(1.0)
        node.lease_deadline = asked + ttl - fence_margin(ttl)
        log.warning("cluster: node %d registered again", node.node_id)
        return node.lease

    async def _report_fencing(self) -> None:
        """One log line when this gateway fences itself (its lease was not renewed in time) and one
        when it serves again."""
        node, was_fenced = self.node, False
        while True:
            fenced = node.fenced()
            if fenced and not was_fenced:
                log.error("cluster: node %d fenced: its etcd lease was not renewed in time and may expire; "
                          "refusing requests for the queues it leads", node.node_id)
            elif was_fenced and not fenced:
                log.warning("cluster: node %d unfenced: lease renewed, serving the queues it leads", node.node_id)
            was_fenced = fenced
            await trio.sleep(0.1 if fenced else max(0.0, min(node.lease_deadline - time.monotonic(), 1.0)) + 0.01)

    def _make_local(self, name: str, record) -> None:
        """A topic of the cluster exists in this gateway's store too (its queues' files are only
        written by their owners); the cluster's queue count (grown, or another gateway's creation that
        won over this one's), its configs and perm (`ClusterNode.topic_updated`) and a deletion are followed."""
        topics = self.app.store.topics
        cfg = topics.get(name)
        if record is None:  # deleted in the cluster, with its pop journal
            for deleted in (name, journal_topic(name)):
                if deleted in topics:
                    topics.delete(deleted)
            if getattr(self.app, "kafka", None) is not None:  # as DeleteTopics where it was asked: a topic
                self.app.kafka.producers.forget_topic(name)  # made again under the name starts its sequences at 0
        elif cfg is None:
            topics.create(name, read_queues=record.queues, write_queues=record.queues, perm=record.perm,
                          attributes=record.attributes, topic_id=_agreed_id(name, record))
            if definition(topics.get(name)) is not None:
                self.app.views.refresh()  # a filtered view: maintained and backfilled from the base queues here
        elif (max(cfg.read_queues, cfg.write_queues) != record.queues or cfg.topic_id != _agreed_id(name, record)
              or (cfg.attributes or {}) != record.attributes or cfg.perm != record.perm):
            # grown or configured elsewhere, or auto-created here while another gateway's creation (and id) won
            cfg.read_queues = cfg.write_queues = record.queues
            cfg.topic_id = _agreed_id(name, record)
            cfg.attributes, cfg.perm = dict(record.attributes), record.perm
            topics.update(cfg)

    def _publish_unassigned(self) -> set[str]:
        """Topics of this data dir that etcd does not know (made before joining): this node owns them."""
        published = set()
        for name in self.app.store.topics.names():
            cfg = self.app.store.topics.get(name)
            if not self.node.local(name) and name not in self.node.view.topics:
                self.node.topic_created(cfg, replication_factor=1, members=[self.node.node_id])
                published.add(name)
        return published


def _agreed_id(name: str, record) -> bytes:
    """The topic id the cluster agreed on: the creator's, in its record (a record of a gateway from
    before topic ids has none: every gateway then takes the id such topics always had)."""
    return parse_topic_id(record.topic_id) or legacy_topic_id(name)
