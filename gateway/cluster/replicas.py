"""The cluster's assignment drives replication (docs/cluster.md, "Replicas and failover"): each
queue with more than one replica gets its role on this node from the assignment in etcd (leader,
follower, or none), the leader's in-sync-set changes are written back (a transaction compared on the
epoch), and when a leader's lease ends every live member proposes the first live in-sync replica
as the new leader with the epoch bumped — etcd's compare-and-swap lets exactly one proposal win, and
the bumped epoch fences the old leader if it comes back.

A replicated queue's pop journal (`semantics.replication.pop_journal`: the POP state of every
group on it) gets the same role as the queue, in the same epoch, right after it; a gateway that
starts leading the journal rebuilds the queue's POP state from its copy (`PopEngine.take_over`).
The in-sync set written to etcd is the queue's and its journal's together (a replica behind on
either is out), so an elected replica holds every ack answered after replication."""
from __future__ import annotations

import logging

import trio

from cluster.etcd import EtcdError
from cluster.model import elect
from gateway.flush import durability_lost
from semantics.pop_carry import PopCarry
from semantics.replication import StaleEpoch
from semantics.replication.manager import FOLLOWER, LEADER
from semantics.replication.pop_journal import PopJournal, journal_topic, journaled_topic

log = logging.getLogger("rocketgate.cluster")
ISR_RETRY_S = 0.5  # the pause before writing an in-sync set again after a failed write
ELECTION_RETRY_S = 1.0  # after an election lost to an in-sync set change: the watch brings etcd's set meanwhile


class ReplicaRoles:
    def __init__(self, node, manager, nursery, pop=None) -> None:
        """`pop`: the gateway's PopEngine, whose replicated queues keep their state in pop journals
        (None: no journals, as in tests of the roles alone)."""
        self.node, self.manager, self.nursery, self.pop = node, manager, nursery, pop
        self.view = node.view
        self.journal = PopJournal(manager.store, manager) if pop is not None else None
        self._isr_wanted: dict[tuple[str, int], list] = {}  # queue → newest in-sync change not yet written
        if pop is not None:
            pop.use_journal(self.journal)
            if hasattr(manager.store, "carry"):  # a tiered store: the journals must not pin its files
                manager.store.carry = PopCarry(manager.store, pop, self.journal)

    def install(self) -> None:
        self._addrs: dict[int, str] = {}  # every member's replication address, kept after it leaves
        self.view.on_assignment(self._assigned)
        self.view.on_members(lambda _members: self._members_changed())
        self.manager.on_isr_change = self._isr_changed
        if hasattr(self.node, "fenced"):  # a fenced leader completes no acks=all write
            self.manager.node_fenced = self.node.fenced
        self._members_changed()

    def _members_changed(self) -> None:
        """Roles again (a replica or leader whose address was unknown may be known now), the in-sync
        sets etcd lacks a member of, then elect where a leader left."""
        for node_id, member in self.view.members.items():
            self._addrs[node_id] = member.remoting_addr
        for (topic, qid), a in list(self.view.queues.items()):
            self._assigned(topic, qid, a.leader, list(a.replicas), list(a.isr), a.epoch)
        self._rewrite_isr_of_returned_members()
        self._elect_where_leader_left()

    def _rewrite_isr_of_returned_members(self) -> None:
        """A replica that caught up while it was not a live member (its lease had lapsed, KIP-841)
        was left out of the set written to etcd, yet stays in this leader's own set, so no later
        fetch of it counts as catching up again: once it is a member again, write the own set."""
        me = self.node.node_id
        for (topic, qid), a in list(self.view.queues.items()):
            r = self.manager.roles.get((topic, qid))
            if a.leader != me or r is None or r.role != LEADER or r.epoch != a.epoch:
                continue  # (a write in flight computed its ids before this change: it writes once more)
            local = [self.manager.self_id, *r.isr]
            back = set(self._in_sync_ids(topic, qid, local)) - set(a.isr)
            if back:
                log.info("cluster: %s/%d: in-sync %s left out of etcd's set while not members: writing it again",
                         topic, qid, sorted(back))
                self._isr_changed(topic, qid, sorted(local))

    def _addr(self, node_id: int) -> str | None:
        member = self.view.members.get(node_id)
        return member.remoting_addr if member is not None else self._addrs.get(node_id)

    def _assigned(self, topic: str, qid: int, leader: int, replicas: list, isr: list, epoch: int) -> None:
        """This node's role for the queue and for its pop journal, as the assignment says."""
        self._role(topic, qid, leader, replicas, isr, epoch)
        if self.journal is None:
            return
        if self.node.node_id in replicas and len(replicas) > 1:
            self.journal.ensure(topic, qid + 1)
        was_leading = self.journal.leads(topic, qid)
        self._role(journal_topic(topic), qid, leader, replicas, isr, epoch)
        if self.journal.leads(topic, qid) and not was_leading:
            self.pop.take_over(topic, qid)
            log.debug("cluster: %s/%d: POP state taken over from its pop journal", topic, qid)

    def _role(self, topic: str, qid: int, leader: int, replicas: list, isr: list, epoch: int) -> None:
        """This node's role for one replicated queue (unchanged roles are left alone)."""
        me = self.node.node_id
        current = self.manager.roles.get((topic, qid))
        try:
            if len(replicas) < 2:  # not replicated: a plain queue of its leader
                if current is not None:  # no longer (reassigned to one node, `cluster move`)
                    self.manager.stop_replica(topic, qid)
                return
            if leader == me:
                others = [a for a in (self._addr(r) for r in replicas if r != me) if a]
                if (current is not None and current.role == LEADER and current.epoch == epoch
                        and set(current.replicas) == set(others)):
                    return
                in_sync = [a for a in (self._addr(r) for r in isr if r != me) if a]
                self.manager.become_leader(topic, qid, epoch, others, isr=in_sync)
            elif me in replicas:
                leader_addr = self._addr(leader)
                if leader_addr is None or (current is not None and current.role == FOLLOWER
                                           and current.epoch == epoch and current.leader == leader_addr):
                    return
                self.manager.become_follower(topic, qid, epoch, leader_addr)
            elif current is not None:
                self.manager.stop_replica(topic, qid)
        except StaleEpoch as exc:
            log.warning("cluster: assignment of %s/%d ignored: %s", topic, qid, exc)
        except OSError as exc:  # the leader-epoch checkpoint not written (a full or failing disk): as a
            durability_lost(exc)  # failed CommitLog flush, exit 3 (before: a traceback, exit 1; docs/faults.md)

    def _isr_changed(self, topic: str, qid: int, isr_addrs: list) -> None:
        """A leader's in-sync set of a queue or of its journal changed: have it written to etcd."""
        key = (journaled_topic(topic) or topic, qid)
        writing = key in self._isr_wanted
        self._isr_wanted[key] = list(isr_addrs)
        if not writing:
            self.nursery.start_soon(self._write_isr, *key)

    async def _write_isr(self, topic: str, qid: int) -> None:
        """The one writer of a queue's in-sync set, until no newer change waits. The queue and its
        journal often change together; two writes at once would race on etcd's compare and the
        newer set could be lost, leaving a caught-up replica out for good. A failed write (etcd
        unreachable) is tried again while this node leads the queue in the same epoch: until etcd
        holds a shrunk set, acks=all keeps waiting for the old one (KIP-497)."""
        key = (topic, qid)
        first = self.view.queues.get(key)
        try:
            while (wanted := self._isr_wanted.get(key)) is not None:
                a = self.view.queues.get(key)
                if a is None or first is None or a.leader != self.node.node_id or a.epoch != first.epoch:
                    return  # no longer led here in that epoch: the role change decides
                ids = self._in_sync_ids(topic, qid, wanted)
                for name in (topic, journal_topic(topic)):  # electable once written: acks=all waits for them
                    self.manager.isr_pending(name, qid, a.epoch, [addr for addr in map(self._addr, ids) if addr])
                written = await self._write("in-sync set", self.node.coordination.update_isr, topic, qid, ids,
                                            a.epoch)
                if written is None:
                    await trio.sleep(ISR_RETRY_S)
                    continue
                addrs = [addr for addr in (self._addr(n) for n in written.isr) if addr]
                for name in (topic, journal_topic(topic)):
                    self.manager.isr_accepted(name, qid, written.epoch, addrs)
                if self._isr_wanted.get(key) is wanted:
                    return  # nothing newer came while writing
        finally:
            self._isr_wanted.pop(key, None)

    def _in_sync_ids(self, topic: str, qid: int, isr_addrs: list) -> list[int]:
        """The replicas in sync on both the queue and its journal, as node ids (this leader first if
        missing)."""
        for key in ((topic, qid), (journal_topic(topic), qid)):
            r = self.manager.roles.get(key)
            if r is not None and r.role == LEADER:
                isr_addrs = [addr for addr in isr_addrs if addr == self.manager.self_id or addr in r.isr]
        ids = sorted(n for n, m in self.view.members.items() if m.remoting_addr in isr_addrs)
        if self.node.node_id not in ids:
            ids.insert(0, self.node.node_id)
        return ids

    def _elect_where_leader_left(self, only: tuple[str, int] | None = None) -> None:
        live = set(self.view.live())
        for (topic, qid), a in list(self.view.queues.items()):
            if a.leader in live or len(a.replicas) < 2 or only not in (None, (topic, qid)):
                continue
            chosen = elect(a, live)
            if chosen is None:
                log.error("cluster: %s/%d has no live in-sync replica; it stays unavailable", topic, qid)
                continue
            self.nursery.start_soon(self._elect, topic, qid, chosen.leader, a.epoch)

    async def _elect(self, topic: str, qid: int, leader: int, epoch: int) -> None:
        """Propose `leader`. When etcd's in-sync set no longer holds it (an in-sync write, same epoch,
        came after this view), decide again once the watch has brought etcd's set; before, the
        ValueError ended the gateway (two of three at once in the fault harness: docs/faults.md)."""
        try:
            await self._write("leader", self.node.coordination.elect_leader, topic, qid, leader, epoch)
        except ValueError as exc:
            log.warning("cluster: %s/%d: electing %d lost to an in-sync set change (%s); deciding again",
                        topic, qid, leader, exc)
            await trio.sleep(ELECTION_RETRY_S)
            self._elect_where_leader_left(only=(topic, qid))

    async def _write(self, what: str, fn, topic: str, qid: int, value, expected_epoch: int):
        """The new assignment, or None if etcd was unreachable or the epoch moved."""
        try:
            result = await fn(topic, qid, value, expected_epoch)
        except EtcdError as exc:
            log.warning("cluster: writing the %s of %s/%d failed: %s", what, topic, qid, exc)
            return None
        if result is not None:
            log.info("cluster: %s/%d %s is now %s", topic, qid, what, value)
        return result
