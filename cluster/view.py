"""A gateway's live copy of the cluster state in etcd: members, topics, queue assignments, loaded
once and then kept current by a watch on the whole prefix (re-loaded after the watch breaks).
Readers on the event loop see a consistent dict snapshot; subscribers hear about changes:

  on_assignment(topic, queue_id, leader, replicas, isr, epoch)  a queue's assignment is new or changed
  on_topic(topic, TopicRecord or None)                          a topic appeared, changed or went (None)
  on_members(members)                                           the set of live members changed
  on_offset(group, topic, queue_id, value dict or None)         a committed offset changed (None: deleted)
  on_key(prefix, fn): fn(key, value bytes or None)              another key under `prefix` changed (None: deleted)
"""
from __future__ import annotations

import json
import logging

import trio

from cluster import model
from cluster.etcd import EtcdError, WatchEvent
from cluster.model import Member, QueueAssignment, TopicRecord

log = logging.getLogger("rocketgate.cluster")

WATCH_RETRY_DELAY = 1.0
STALE_READS = 5  # reads of a reload before an etcd that went back is believed (one more is enough otherwise)
LOADED = (model.MEMBERS, model.TOPICS, model.QUEUES)  # the kinds of key a load replaces whole


class ClusterView:
    def __init__(self, coordination) -> None:
        self.coordination = coordination
        self.members: dict[int, Member] = {}
        self.topics: dict[str, TopicRecord] = {}
        self.queues: dict[tuple[str, int], QueueAssignment] = {}
        self.revision = 0
        self._snapshot_revision = 0  # the revision of the last load's read
        self._on_assignment: list = []
        self._on_topic: list = []
        self._on_members: list = []
        self._on_offset: list = []
        self._on_key: list = []  # (prefix, fn) for keys the view itself does not keep

    # --- subscriptions ---
    def on_assignment(self, fn) -> None:
        self._on_assignment.append(fn)

    def on_topic(self, fn) -> None:
        self._on_topic.append(fn)

    def on_members(self, fn) -> None:
        self._on_members.append(fn)

    def on_offset(self, fn) -> None:
        self._on_offset.append(fn)

    def on_key(self, prefix: bytes, fn) -> None:
        self._on_key.append((prefix, fn))

    def live(self) -> list[int]:
        return sorted(self.members)

    def queues_of(self, topic: str) -> list[QueueAssignment | None]:
        record = self.topics.get(topic)
        return [self.queues.get((topic, q)) for q in range(record.queues)] if record else []

    # --- keeping current ---
    async def load(self) -> None:
        """The whole state from one etcd read. A read older than what the watch has already applied
        (a rejoin's reload runs beside the watch, and the watch's events can be handled first while
        the read's answer waits) is read again: applied, it would put older assignments and members
        back, and the watch, already past them, would never bring the newer ones again (seed 2804:
        a gateway named epoch 7's leader for good after electing itself in epoch 8, docs/faults.md)."""
        for _ in range(STALE_READS):
            members, topics, queues, offsets, revision = await self.coordination.load()
            if revision >= self.revision:
                break
            log.info("cluster: reload read revision %d, older than the watch's %d: reading again", revision,
                     self.revision)
        else:  # etcd itself went back (restored): its state is the truth
            log.warning("cluster: etcd's revision %d stays below the watch's %d: taking it", revision, self.revision)
        old_members = set(self.members)
        self.members, self.revision = members, revision
        self._snapshot_revision = revision
        for name in set(self.topics) - set(topics):
            self._drop_topic(name)
        for name, record in topics.items():
            self._set_topic(name, record)
        for (topic, qid), a in queues.items():
            self.set_queue(topic, qid, a)
        for (group, topic, qid), value in offsets.items():
            self._offset(group, topic, qid, value)
        if set(members) != old_members:
            self._members_changed()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Watch etcd from the loaded revision on, until cancelled."""
        task_status.started()
        while True:
            try:
                await self.coordination.etcd.watch(model.PREFIX, self.revision + 1, self._apply)
            except EtcdError as exc:
                log.warning("cluster: watch: %s; reloading in %.0f s", exc, WATCH_RETRY_DELAY)
            await trio.sleep(WATCH_RETRY_DELAY)
            try:
                await self.load()
            except EtcdError as exc:
                log.warning("cluster: reload failed: %s", exc)

    async def _apply(self, events: list[WatchEvent]) -> None:
        members_changed = False
        for e in events:
            key, deleted = e.kv.key, e.kind == "DELETE"
            self.revision = max(self.revision, e.kv.mod_revision)
            if 0 < e.kv.mod_revision <= self._snapshot_revision and key.startswith(LOADED):
                continue  # the last load's snapshot holds this change and any later one: not back to it
            if key.startswith(model.MEMBERS):
                node_id = int(key[len(model.MEMBERS):])
                if deleted:
                    members_changed |= self.members.pop(node_id, None) is not None
                else:
                    members_changed |= self.members.get(node_id) != (m := Member.from_json(e.kv.value))
                    self.members[node_id] = m
            elif key.startswith(model.TOPICS):
                name = key[len(model.TOPICS):].decode()
                if deleted:
                    self._drop_topic(name)
                else:
                    self._set_topic(name, TopicRecord.from_json(e.kv.value))
            elif key.startswith(model.QUEUES) and not deleted:
                topic, qid = model.parse_queue_key(key)
                self.set_queue(topic, qid, QueueAssignment.from_json(e.kv.value))
            elif key.startswith(model.OFFSETS):
                self._offset(*model.parse_offset_key(key), None if deleted else json.loads(e.kv.value))
            else:
                for prefix, fn in self._on_key:
                    if key.startswith(prefix):
                        fn(key, None if deleted else e.kv.value)
        if members_changed:
            self._members_changed()

    def _set_topic(self, name: str, record: TopicRecord) -> None:
        if self.topics.get(name) == record:
            return
        self.topics[name] = record
        for q in [k for k in self.queues if k[0] == name and k[1] >= record.queues]:
            del self.queues[q]  # placed here by a creation that lost to another gateway's
        for fn in self._on_topic:
            fn(name, record)

    def _drop_topic(self, name: str) -> None:
        record = self.topics.pop(name, None)
        if record is None:
            return
        for q in [k for k in self.queues if k[0] == name]:
            del self.queues[q]
        for fn in self._on_topic:
            fn(name, None)

    def set_queue(self, topic: str, qid: int, a: QueueAssignment) -> None:
        """A queue's assignment (from etcd, or placed by this gateway): subscribers hear a change."""
        if self.queues.get((topic, qid)) == a:
            return
        self.queues[(topic, qid)] = a
        for fn in self._on_assignment:
            fn(topic, qid, a.leader, list(a.replicas), list(a.isr), a.epoch)

    def _offset(self, group: str, topic: str, qid: int, value: dict | None) -> None:
        for fn in self._on_offset:
            fn(group, topic, qid, value)

    def _members_changed(self) -> None:
        log.info("cluster: live members %s", self.live())
        for fn in self._on_members:
            fn(dict(self.members))
