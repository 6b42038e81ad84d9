"""Consumer offsets for both protocols in one table, persisted as config/consumerOffset.json in
RocketMQ's layout `{"offsetTable": {"topic@group": {"0": 12}}}`; Kafka commit metadata and committed
leader epochs are kept next to it under "metadataTable" and "leaderEpochTable" in the same shape
(RocketMQ ignores keys it does not know)."""
from __future__ import annotations

import trio

from semantics.clock import WALL_CLOCK

FILE = "consumerOffset.json"
PERSIST_INTERVAL = 5.0  # seconds between writes of a changed table (async flush mode)


class OffsetTable:
    """`persist()` hands the table, if it changed, to the App's off-loop config `writer`
    (ConfigWriterService): the `run` service calls it every PERSIST_INTERVAL, shutdown once more.
    `durable=True` (sync flush mode) also submits on every change, and `await wait_durable()` returns once
    that is on disk: a commit handler awaits it before it acknowledges. Without a writer (tools,
    unit tests) the file is written in place."""

    def __init__(self, store, durable: bool = False, writer=None, clock=WALL_CLOCK) -> None:
        self.store = store
        self.durable = durable
        self.clock = clock
        self._writer = writer
        self._submitted = 0  # number of the newest submission to the writer
        self._offsets: dict[tuple[str, str], dict[int, int]] = {}  # (group, topic) -> qid -> offset
        self._meta: dict[tuple[str, str], dict[int, str]] = {}
        self._epochs: dict[tuple[str, str], dict[int, int]] = {}  # committed leader epochs other than -1
        # wall ms of each offset's last change since this start (the console's "consumed when"; not persisted)
        self._changed_ms: dict[tuple[str, str], dict[int, int]] = {}
        self._dirty = False
        # called (group, topic, queue id, offset or None when deleted) on every change: a cluster
        # member mirrors its commits to the others through etcd (gateway.cluster.offsets)
        self.observer = None
        # async (-> bool): has the cluster every change so far (etcd, gateway.cluster.offsets)?
        self.mirrored = None
        # (group, topic, queue id) -> the cluster's (offset or None, metadata, leader epoch) while a
        # change of this gateway's is still on its way there, else None (gateway.cluster.offsets)
        self.settled = None
        # async (keys -> bool): read (group, topic, queue id) `keys` from the cluster (etcd) into the
        # table now; False when the cluster did not answer (gateway.cluster.offsets)
        self.current = None
        doc = store.read_config(FILE, {}) or {}
        for table, target, conv in ((doc.get("offsetTable") or {}, self._offsets, int),
                                    (doc.get("metadataTable") or {}, self._meta, str),
                                    (doc.get("leaderEpochTable") or {}, self._epochs, int)):
            for key, queues in table.items():
                topic, sep, group = key.partition("@")  # topics never contain '@'; groups may
                if not sep:
                    continue
                target[(group, topic)] = {int(q): conv(v) for q, v in queues.items()}

    def commit(self, group: str, topic: str, queue_id: int, offset: int, metadata: str = "",
               leader_epoch: int = -1) -> None:
        """Set an offset; the same offset, metadata and epoch again change nothing (nothing to write)."""
        if (self.fetch(group, topic, queue_id) == int(offset) and self.metadata(group, topic, queue_id) == metadata
                and self.leader_epoch(group, topic, queue_id) == leader_epoch):
            return
        self._offsets.setdefault((group, topic), {})[queue_id] = int(offset)
        for table, value, unset in ((self._meta, metadata, ""), (self._epochs, leader_epoch, -1)):
            if value != unset:
                table.setdefault((group, topic), {})[queue_id] = value
            else:
                table.get((group, topic), {}).pop(queue_id, None)
        self._changed_ms.setdefault((group, topic), {})[queue_id] = self.clock.now_ms()
        self._changed(group, topic, queue_id, int(offset))

    def _changed(self, group: str, topic: str, queue_id: int, offset: int | None) -> None:
        self._dirty = True
        if self.durable:
            self.persist()
        if self.observer is not None:
            self.observer(group, topic, queue_id, offset)

    def fetch(self, group: str, topic: str, queue_id: int) -> int | None:
        return self._offsets.get((group, topic), {}).get(queue_id)

    def metadata(self, group: str, topic: str, queue_id: int) -> str:
        return self._meta.get((group, topic), {}).get(queue_id, "")

    def leader_epoch(self, group: str, topic: str, queue_id: int) -> int:
        """The leader epoch a Kafka client committed with the offset (-1: none)."""
        return self._epochs.get((group, topic), {}).get(queue_id, -1)

    def acknowledged(self, group: str, topic: str, queue_id: int) -> tuple[int | None, str, int]:
        """(offset or None, metadata, leader epoch) as the last acknowledged commit left them: in a
        cluster a commit still waiting for etcd is not shown, since it may be withdrawn (a reader
        would have seen an offset the group never had); alone, the table."""
        held = None if self.settled is None else self.settled(group, topic, queue_id)
        if held is not None:
            return held
        offset = self.fetch(group, topic, queue_id)
        return offset, self.metadata(group, topic, queue_id) if offset is not None else "", \
            self.leader_epoch(group, topic, queue_id)

    def delete(self, group: str, topic: str, queue_id: int) -> None:
        """Forget one partition's committed offset (Kafka OffsetDelete)."""
        for table in (self._offsets, self._meta, self._epochs, self._changed_ms):
            queues = table.get((group, topic))
            if queues is not None and queues.pop(queue_id, None) is not None and not queues:
                del table[(group, topic)]
        self._changed(group, topic, queue_id, None)

    def group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        return {(topic, q): off for (g, topic), queues in self._offsets.items() if g == group
                for q, off in queues.items()}

    def entries(self):
        """(group, topic, queue, offset) of every committed offset, in one pass (metrics, dashboards)."""
        for (group, topic), queues in self._offsets.items():
            for q, off in queues.items():
                yield group, topic, q, off

    def past(self, topic: str, queue_id: int, offset: int) -> list[tuple[str, int, int | None]]:
        """(group, committed offset, wall ms it was committed at or None if before this start) of every
        group whose committed offset of the queue is past `offset`: the groups that consumed it."""
        return sorted((group, queues[queue_id], self._changed_ms.get((group, t), {}).get(queue_id))
                      for (group, t), queues in self._offsets.items()
                      if t == topic and queues.get(queue_id, -1) > offset)

    def groups(self) -> list[str]:
        return sorted({g for g, _ in self._offsets})

    def delete_group(self, group: str) -> None:
        for topic, q in self.group_offsets(group) if self.observer is not None else ():
            self.observer(group, topic, q, None)
        for table in (self._offsets, self._meta, self._epochs, self._changed_ms):
            for key in [k for k in table if k[0] == group]:
                del table[key]
        self._dirty = True
        if self.durable:
            self.persist()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The periodic persistence service."""
        task_status.started()
        while True:
            await self.clock.sleep(PERSIST_INTERVAL)
            self.persist()

    async def wait_durable(self) -> None:
        """In sync mode: return once every change so far is on disk. In async mode: submit it."""
        self.persist()
        if self.durable and self._writer is not None and self._submitted:
            await self._writer.written(FILE, self._submitted)

    async def wait_mirrored(self, keys=()) -> bool:
        """In a cluster: wait until every change so far is where the other gateways read it; False
        when that did not happen in time: the commit must not be acknowledged, and its changes of
        (group, topic, queue) `keys` are undone (back to the cluster's values). Alone: True."""
        return True if self.mirrored is None else await self.mirrored(keys)

    async def wait_current(self, keys) -> bool:
        """In a cluster: the table holds the cluster's values of `keys` as of now (not what a lagging
        watch has brought so far), for an OffsetFetch to answer; False if the cluster did not answer
        (the fetch must be refused). Alone: True."""
        return True if self.current is None else await self.current(keys)

    def persist(self) -> None:
        """Submit (or write) the table if it changed since the last time."""
        if not self._dirty:
            return
        self._dirty = False
        doc = {
            "offsetTable": {f"{t}@{g}": {str(q): o for q, o in queues.items()}
                            for (g, t), queues in self._offsets.items()},
            "metadataTable": {f"{t}@{g}": {str(q): m for q, m in queues.items()}
                              for (g, t), queues in self._meta.items() if queues},
            "leaderEpochTable": {f"{t}@{g}": {str(q): e for q, e in queues.items()}
                                 for (g, t), queues in self._epochs.items() if queues},
        }
        if self._writer is None:
            self.store.write_config(FILE, doc)
        else:
            self._submitted = self._writer.submit(FILE, doc)
