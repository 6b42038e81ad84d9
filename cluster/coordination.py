"""The cluster's writes to etcd, each one transaction: a member's registration under its lease,
a topic's creation with its queue assignments, a queue's reassignment, ISR change or leader
election (compare-and-swap on the queue key's revision after checking the epoch, so a writer
holding a stale epoch is fenced), and producer-id blocks (compare-and-swap on the counter)."""
from __future__ import annotations

import json
import logging
import time

import trio

from cluster import model
from cluster.etcd import (Etcd, EtcdError, compare_mod_revision, compare_version, op_delete, op_get, op_put,
                          prefix_end)
from cluster.model import Member, QueueAssignment, TopicRecord

log = logging.getLogger("rocketgate.cluster")

MAX_TXN_OPS = 100  # etcd's --max-txn-ops defaults to 128


def fence_margin(ttl: float) -> float:
    """How long before its lease can expire a member stops serving the queues it leads: the new
    leader is elected only after etcd expires the lease, so the old one is silent by then."""
    return min(1.0, ttl / 4)


class NodeIdTaken(Exception):
    """Another live gateway is registered with this node id."""


class Coordination:
    def __init__(self, etcd: Etcd) -> None:
        self.etcd = etcd

    # --- membership ---
    async def register(self, member: Member, ttl: int) -> int:
        """Register `member` under a fresh lease of `ttl` seconds; returns the lease id (etcd
        expires it no earlier than `ttl` after the call began). NodeIdTaken when a live gateway
        holds the id (its key exists: its lease has not expired)."""
        lease = await self.etcd.lease_grant(ttl)
        key = model.member_key(member.node_id)
        ok, resp = await self.etcd.txn([compare_version(key, 0)], [op_put(key, member.to_json(), lease)], [op_get(key)])
        if not ok:
            await self.etcd.lease_revoke(lease)
            holder = resp[0][0].value.decode(errors="replace") if resp and resp[0] else "?"
            raise NodeIdTaken(f"node id {member.node_id} is held by a live gateway ({holder})")
        return lease

    async def keep_alive(self, lease: int, ttl: int, *, on_lost, on_renewed) -> None:
        """Refresh `lease` every ttl/3 s until cancelled. `on_renewed(expires)` after each refresh:
        the monotonic time before which etcd cannot expire it (the TTL counted from when the refresh
        was sent). `await on_lost()` (returns the new lease) when etcd says it has expired (it was
        unreachable for longer than the TTL). Unreachable etcd is logged and retried."""
        while True:
            await trio.sleep(max(ttl / 3, 0.2))
            sent = time.monotonic()
            try:
                left = await self.etcd.lease_keepalive(lease)
            except EtcdError as exc:
                log.warning("cluster: lease keep-alive failed: %s", exc)
                continue
            if left <= 0:
                log.error("cluster: lease %x expired (etcd unreachable longer than %d s)", lease, ttl)
                lease = await on_lost()
            else:
                on_renewed(sent + left)

    async def deregister(self, lease: int) -> None:
        await self.etcd.lease_revoke(lease)

    # --- reading ---
    async def load(self) -> tuple[dict, dict, dict, dict, int]:
        """(members by id, TopicRecord by topic, QueueAssignment by (topic, queue id), committed
        offsets by (group, topic, queue id), revision)."""
        kvs, revision = await self.etcd.get_prefix(model.PREFIX)
        members, topics, queues, offsets = {}, {}, {}, {}
        for kv in kvs:
            if kv.key.startswith(model.MEMBERS):
                m = Member.from_json(kv.value)
                members[m.node_id] = m
            elif kv.key.startswith(model.TOPICS):
                topics[kv.key[len(model.TOPICS):].decode()] = TopicRecord.from_json(kv.value)
            elif kv.key.startswith(model.QUEUES):
                queues[model.parse_queue_key(kv.key)] = QueueAssignment.from_json(kv.value)
            elif kv.key.startswith(model.OFFSETS):
                offsets[model.parse_offset_key(kv.key)] = json.loads(kv.value)
        return members, topics, queues, offsets, revision

    # --- offsets ---
    async def read_offset(self, group: str, topic: str, queue_id: int) -> dict | None:
        """One committed offset's value dict as etcd has it (None: none)."""
        kv = await self.etcd.get(model.offset_key(group, topic, queue_id))
        return None if kv is None else json.loads(kv.value)

    async def write_offsets(self, changes: dict, expected=None) -> dict:
        """Put (value dict) or delete (None) committed offsets, keyed (group, topic, queue id). With
        `expected(key, etcd's value dict or None) -> bool` each key is written only over a value its
        writer expects (read, then written on the condition that it is unchanged: compare-and-swap on
        its mod revision): a key whose value it does not expect (another gateway committed meanwhile)
        is left alone. Returns those keys with etcd's values."""
        def op(k):
            return (op_put(model.offset_key(*k), json.dumps(changes[k]).encode()) if changes[k] is not None
                    else op_delete(model.offset_key(*k)))
        conflicts: dict = {}
        keys = list(changes)
        for i in range(0, len(keys), MAX_TXN_OPS):
            chunk = keys[i:i + MAX_TXN_OPS]
            if expected is None:
                await self.etcd.txn([], [op(k) for k in chunk])
                continue
            while chunk:  # again while a key changed between the read and the write
                current = await self._offsets_now(chunk)
                unexpected = [k for k in chunk if not expected(k, current[k][0])]
                conflicts.update({k: current[k][0] for k in unexpected})
                chunk = [k for k in chunk if k not in unexpected]
                if not chunk or (await self.etcd.txn(
                        [_unchanged(model.offset_key(*k), current[k][1]) for k in chunk], [op(k) for k in chunk]))[0]:
                    break
        return conflicts

    async def _offsets_now(self, keys) -> dict:
        """key -> (etcd's value dict or None, its mod revision or 0)."""
        _, got = await self.etcd.txn([], [op_get(model.offset_key(*k)) for k in keys])
        return {k: (json.loads(kvs[0].value), kvs[0].mod_revision) if kvs else (None, 0) for k, kvs in zip(keys, got)}

    # --- Kafka transactional ids (gateway.cluster.txns) ---
    async def read_txn(self, transactional_id: str) -> tuple[dict | None, int]:
        """(state dict or None, mod revision: 0 when absent) of one transactional id."""
        kv = await self.etcd.get(model.txn_key(transactional_id))
        return (json.loads(kv.value), kv.mod_revision) if kv else (None, 0)

    async def txn_states(self, transactional_ids=None) -> dict[str, dict]:
        """Transactional id -> state dict, of those ids (None: every one)."""
        if transactional_ids is not None:
            return {t: state for t in transactional_ids if (state := (await self.read_txn(t))[0]) is not None}
        kvs, _ = await self.etcd.get_prefix(model.TXNS)
        return {kv.key[len(model.TXNS):].decode(): json.loads(kv.value) for kv in kvs}

    async def swap_txn(self, transactional_id: str, revision: int, state: dict) -> int:
        """Put the state if the key is still at `revision` (0: still absent): the key's new revision,
        0 if someone wrote first."""
        key = model.txn_key(transactional_id)
        cond = compare_mod_revision(key, revision) if revision else compare_version(key, 0)
        return await self.etcd.txn_revision([cond], [op_put(key, json.dumps(state).encode())])

    # --- topics and queues ---
    async def create_topic(self, topic: str, record: TopicRecord, assignments: list[QueueAssignment]) -> bool:
        """Create the topic with its assignments unless it exists (then False: the first creator
        anywhere in the cluster wins)."""
        key = model.topic_key(topic)
        puts = [op_put(model.queue_key(topic, q), a.to_json()) for q, a in enumerate(assignments)]
        ok, _ = await self.etcd.txn([compare_version(key, 0)], [op_put(key, record.to_json())] + puts[:MAX_TXN_OPS - 1])
        if ok:
            for i in range(MAX_TXN_OPS - 1, len(puts), MAX_TXN_OPS):
                await self.etcd.txn([], puts[i:i + MAX_TXN_OPS])
        return ok

    async def add_queues(self, topic: str, record: TopicRecord, new: dict[int, QueueAssignment]) -> None:
        """A topic grown (CreatePartitions / a bigger RocketMQ queue count): the record and the new queues."""
        ops = [op_put(model.topic_key(topic), record.to_json())]
        ops += [op_put(model.queue_key(topic, q), a.to_json()) for q, a in sorted(new.items())]
        for i in range(0, len(ops), MAX_TXN_OPS):
            await self.etcd.txn([], ops[i:i + MAX_TXN_OPS])

    async def delete_topic(self, topic: str) -> None:
        """The topic's record and every queue assignment, in one transaction."""
        queues = model.QUEUES + topic.encode() + b"/"
        await self.etcd.txn([], [op_delete(model.topic_key(topic)), op_delete(queues, prefix_end(queues))])

    async def queue(self, topic: str, queue_id: int) -> tuple[QueueAssignment | None, int]:
        kv = await self.etcd.get(model.queue_key(topic, queue_id))
        return (QueueAssignment.from_json(kv.value), kv.mod_revision) if kv else (None, 0)

    async def swap_queue(self, topic: str, queue_id: int, expected_epoch: int, change) -> QueueAssignment | None:
        """Replace the queue's assignment by `change(current)` if its epoch is still
        `expected_epoch` and nobody wrote it meanwhile; the new assignment, or None (fenced)."""
        current, revision = await self.queue(topic, queue_id)
        if current is None or current.epoch != expected_epoch:
            return None
        new = change(current)
        key = model.queue_key(topic, queue_id)
        ok, _ = await self.etcd.txn([compare_mod_revision(key, revision)], [op_put(key, new.to_json())])
        return new if ok else None

    async def update_isr(self, topic: str, queue_id: int, isr: list[int], expected_epoch: int):
        """Shrink or grow the in-sync set (the leader stays; the epoch does not change)."""
        return await self.swap_queue(topic, queue_id, expected_epoch,
                                     lambda a: QueueAssignment(a.leader, a.replicas, tuple(isr), a.epoch))

    async def elect_leader(self, topic: str, queue_id: int, leader: int, expected_epoch: int):
        """Make `leader` (an in-sync replica) the leader with the epoch bumped. The old leader leaves
        the in-sync set (it is gone; it rejoins once it has caught up with the new leader), so it
        cannot be elected with a log the new leader has grown past."""
        def change(a: QueueAssignment) -> QueueAssignment:
            if leader not in a.isr:
                raise ValueError(f"node {leader} is not in the in-sync set {list(a.isr)}")
            isr = tuple(r for r in a.isr if r != a.leader or r == leader)
            return QueueAssignment(leader, a.replicas, isr, a.epoch + 1)
        return await self.swap_queue(topic, queue_id, expected_epoch, change)

    async def reassign(self, topic: str, queue_id: int, replicas: list[int]) -> QueueAssignment:
        """An operator's move (admin command): the first of `replicas` leads, epoch bumped."""
        while True:
            current, _ = await self.queue(topic, queue_id)
            if current is None:
                raise KeyError(f"{topic}/{queue_id} has no assignment")
            new = await self.swap_queue(topic, queue_id, current.epoch, lambda a: QueueAssignment(
                replicas[0], tuple(replicas), tuple(replicas), a.epoch + 1))
            if new is not None:
                return new

    # --- producer ids ---
    async def allocate_producer_ids(self, count: int) -> range:
        """A block of `count` producer ids no other gateway (and no earlier run) ever gets."""
        key = model.PRODUCER_IDS
        while True:
            kv = await self.etcd.get(key)
            start = json.loads(kv.value)["next"] if kv else model.FIRST_PRODUCER_ID
            cond = compare_mod_revision(key, kv.mod_revision) if kv else compare_version(key, 0)
            ok, _ = await self.etcd.txn([cond], [op_put(key, json.dumps({"next": start + count}).encode())])
            if ok:
                return range(start, start + count)


def _unchanged(key: bytes, revision: int) -> dict:
    """The key still as read: absent (revision 0), or not written since."""
    return compare_version(key, 0) if revision == 0 else compare_mod_revision(key, revision)
