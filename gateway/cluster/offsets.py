"""The cluster's one offset table: every gateway keeps the whole table (semantics.offsets, its own
files) and mirrors it through etcd. A commit on any gateway (Kafka OffsetCommit on the group's
coordinator, RocketMQ UPDATE_CONSUMER_OFFSET on a queue's broker) is put to etcd (batched, within
FLUSH_DELAY); the watch brings every commit to every gateway, so either protocol reads a group's
offsets on any of them. etcd is where they are durable cluster-wide (last writer wins), so a Kafka
OffsetCommit is acknowledged only once etcd has it (`written`): a commit acknowledged by a coordinator
cut from etcd was lost when the group moved to another gateway (docs/faults.md, findings)."""
from __future__ import annotations

import logging

import trio

from cluster.etcd import EtcdError

log = logging.getLogger("rocketgate.cluster")

FLUSH_DELAY = 0.05  # commits within this window go to etcd in one transaction
RETRY_DELAY = 1.0
COMMIT_TIMEOUT = 5.0  # Kafka's offsets.commit.timeout.ms: how long a commit waits for etcd


class OffsetMirror:
    def __init__(self, offsets, coordination, view) -> None:
        self.offsets = offsets
        self.coordination = coordination
        self.view = view
        self._pending: dict[tuple[str, str, int], dict | None] = {}
        self._wake = trio.Event()
        self._applying = False  # a change from etcd: not sent back
        self._queued = 0  # local changes so far
        self._written = 0  # of those, how many etcd has (every change up to it)
        self._progress = trio.Event()  # set when `_written` moves

    def install(self) -> None:
        self.offsets.observer = self._local_change
        self.offsets.mirrored = self.written
        self.view.on_offset(self._remote_change)

    async def written(self, timeout: float = COMMIT_TIMEOUT) -> bool:
        """Wait until etcd has every local change made so far; False after `timeout` seconds."""
        target = self._queued
        with trio.move_on_after(timeout):
            while self._written < target:
                await self._progress.wait()
        return self._written >= target

    def _local_change(self, group: str, topic: str, qid: int, offset: int | None) -> None:
        if self._applying:
            return
        value = None if offset is None else {
            "offset": offset, "metadata": self.offsets.metadata(group, topic, qid),
            "epoch": self.offsets.leader_epoch(group, topic, qid)}
        self._pending[(group, topic, qid)] = value
        self._queued += 1
        self._wake.set()

    def publish(self, topics: set[str]) -> None:
        """Put this gateway's committed offsets of `topics` to etcd: topics it has just published
        (made before it joined), whose offsets etcd cannot hold yet, nor have deleted."""
        for group, topic, qid, offset in list(self.offsets.entries()):
            if topic in topics:
                self._local_change(group, topic, qid, offset)

    def _remote_change(self, group: str, topic: str, qid: int, value: dict | None) -> None:
        if (group, topic, qid) in self._pending:
            return  # a newer local commit is on its way to etcd
        self._applying = True
        try:
            if value is None:
                if self.offsets.fetch(group, topic, qid) is not None:
                    self.offsets.delete(group, topic, qid)
            else:
                self.offsets.commit(group, topic, qid, int(value["offset"]), value.get("metadata", ""),
                                    int(value.get("epoch", -1)))
        finally:
            self._applying = False

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wake.wait()
            await trio.sleep(FLUSH_DELAY)
            self._wake = trio.Event()
            batch, self._pending = self._pending, {}
            upto = self._queued
            try:
                await self.coordination.write_offsets(batch)
            except EtcdError as exc:
                log.warning("cluster: offsets not written to etcd (%s); retrying", exc)
                self._pending = {**batch, **self._pending}
                self._wake.set()
                await trio.sleep(RETRY_DELAY)
                continue
            self._written = upto
            self._progress.set()
            self._progress = trio.Event()
