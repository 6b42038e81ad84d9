"""The cluster's one offset table: every gateway keeps the whole table (semantics.offsets, its own
files) and mirrors it through etcd. A commit on any gateway (Kafka OffsetCommit on the group's
coordinator, RocketMQ UPDATE_CONSUMER_OFFSET on a queue's broker) is put to etcd (batched, within
FLUSH_DELAY); the watch brings every commit to every gateway, so either protocol reads a group's
offsets on any of them. etcd is where they are durable cluster-wide (last writer wins), so a Kafka
OffsetCommit is acknowledged only once etcd has it (`written`): a commit acknowledged by a coordinator
cut from etcd was lost when the group moved to another gateway (docs/faults.md, findings). A commit
refused that way is withdrawn (`withdraw`): dropped from the queue to etcd and undone locally, back to
etcd's value; kept, it would reach etcd once etcd is back and overwrite a newer commit made meanwhile
on the group's new coordinator. And every write is a compare-and-swap: a key is put only while etcd
has a value this gateway last saw there or wrote itself, so a commit queued here (a oneway RocketMQ
update, a transaction's offsets, one made while etcd was out of reach) never overwrites a commit
another gateway made meanwhile: that one stays, and this gateway takes it (`_overridden`). Until etcd has a commit, Kafka's OffsetFetch answers etcd's value
(`settled`): a reader never sees an offset that may yet be withdrawn (found by the fault harness's
linearizability checker, docs/faults.md)."""
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
        self._inflight: dict[tuple[str, str, int], dict | None] = {}  # the batch being written
        self._confirmed: dict[tuple[str, str, int], dict] = {}  # what etcd has (absent: nothing)
        self._stale: set[tuple[str, str, int]] = set()  # withdrawn: read again from etcd once reachable
        self._last_change: dict[tuple[str, str, int], int] = {}  # key -> number of its newest local change
        self._wake = trio.Event()
        self._applying = False  # a change from etcd: not sent back
        self._queued = 0  # local changes so far
        self._written = 0  # of those, how many etcd has (every change up to it)
        self._progress = trio.Event()  # set when `_written` moves
        self._tried: dict[tuple[str, str, int], list] = {}  # values of a key this gateway put (or tried to)
        self._lost: dict[tuple[str, str, int], int] = {}  # key -> its newest change another gateway's overrode

    def install(self) -> None:
        self.offsets.observer = self._local_change
        self.offsets.mirrored = self.written
        self.offsets.settled = self.settled
        self.offsets.current = self.read_current
        self.view.on_offset(self._remote_change)

    async def written(self, keys=(), timeout: float = COMMIT_TIMEOUT) -> bool:
        """Wait until etcd has every local change made so far; False after `timeout` seconds, and
        then the changes of (group, topic, queue) `keys` (the refused commit's) are withdrawn."""
        target = self._queued
        mine = {key: self._last_change.get(key, 0) for key in keys}
        with trio.move_on_after(timeout):
            while self._written < target:
                await self._progress.wait()
        if self._written >= target:  # False if another gateway's commit won (the table has that one now)
            return not any(self._lost.get(key, 0) >= n > 0 for key, n in mine.items())
        self.withdraw(keys, target)
        return False

    async def read_current(self, keys, timeout: float = COMMIT_TIMEOUT) -> bool:
        """etcd's values of `keys` now (a linearizable read) into the table, but for keys with a change
        of this gateway's on its way there: a gateway that has just become a group's coordinator (back
        from a partition, its watch behind) answered OffsetFetch with an offset the group had long
        committed past, and the consumer went back to it (found by the fault harness: docs/faults.md).
        False when etcd did not answer in `timeout` (the fetch is refused, retriably)."""
        with trio.move_on_after(timeout):
            try:
                for key in keys:
                    value = await self.coordination.read_offset(*key)
                    self._confirm(key, value)
                    if key not in self._pending and key not in self._inflight:
                        self._apply(key, value)
                return True
            except EtcdError as exc:
                log.warning("cluster: committed offsets not read from etcd (%s)", exc)
        return False

    def settled(self, group: str, topic: str, qid: int) -> tuple[int | None, str, int] | None:
        """etcd's value of a key this gateway changed and etcd does not have yet (None otherwise):
        what Kafka's OffsetFetch answers meanwhile, as Kafka's coordinator shows a commit only once
        its __consumer_offsets write is done."""
        key = (group, topic, qid)
        if key not in self._pending and key not in self._inflight:
            return None
        value = self._confirmed.get(key)
        if value is None:
            return None, "", -1
        return int(value["offset"]), value.get("metadata", ""), int(value.get("epoch", -1))

    def withdraw(self, keys, upto: int) -> None:
        """Changes of `keys` made up to change number `upto`, refused for want of etcd: not written
        to etcd later (unless already sent), and the table back to what etcd has. A key changed since
        keeps its newer change (that one's own commit is still waiting)."""
        for key in keys:
            if self._last_change.get(key, 0) > upto:
                continue
            self._pending.pop(key, None)
            self._inflight.pop(key, None)
            self._apply(key, self._confirmed.get(key))
            self._stale.add(key)  # etcd may have a newer value this gateway's watch has not brought yet
        self._wake.set()

    async def _refresh(self) -> None:
        """The withdrawn keys' values read from etcd again (raises EtcdError while unreachable)."""
        for key in list(self._stale):
            value = await self.coordination.read_offset(*key)
            self._stale.discard(key)
            self._confirm(key, value)
            if key not in self._pending:
                self._apply(key, value)

    def _apply(self, key: tuple[str, str, int], value: dict | None) -> None:
        """Set the table to an etcd value without sending it back."""
        group, topic, qid = key
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

    def _confirm(self, key: tuple[str, str, int], value: dict | None) -> None:
        if value is None:
            self._confirmed.pop(key, None)
        else:
            self._confirmed[key] = value

    def _expected(self, key, value) -> bool:
        """May this gateway write `key` over etcd's `value`? Yes if it is the value it last saw in etcd
        or one it wrote itself (its watch may not have brought it yet); else another gateway committed."""
        return value == self._confirmed.get(key) or value in self._tried.get(key, ())

    def _overridden(self, key, value: dict | None, change: int) -> None:
        """Change number `change` of `key` not written: etcd has another gateway's `value`, kept."""
        log.warning("cluster: offset %s not written to etcd: another gateway committed %s meanwhile", key, value)
        self._confirm(key, value)
        self._lost[key] = max(self._lost.get(key, 0), change)
        if key not in self._pending:
            self._apply(key, value)

    def _local_change(self, group: str, topic: str, qid: int, offset: int | None) -> None:
        if self._applying:
            return
        value = None if offset is None else {
            "offset": offset, "metadata": self.offsets.metadata(group, topic, qid),
            "epoch": self.offsets.leader_epoch(group, topic, qid)}
        self._pending[(group, topic, qid)] = value
        self._queued += 1
        self._last_change[(group, topic, qid)] = self._queued
        self._wake.set()

    def publish(self, topics: set[str]) -> None:
        """Put this gateway's committed offsets of `topics` to etcd: topics it has just published
        (made before it joined), whose offsets etcd cannot hold yet, nor have deleted."""
        for group, topic, qid, offset in list(self.offsets.entries()):
            if topic in topics:
                self._local_change(group, topic, qid, offset)

    def _remote_change(self, group: str, topic: str, qid: int, value: dict | None) -> None:
        key = (group, topic, qid)
        self._confirm(key, value)
        if key in self._pending:
            return  # a newer local commit is on its way to etcd
        self._apply(key, value)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wake.wait()
            await trio.sleep(FLUSH_DELAY)
            self._wake = trio.Event()
            batch = self._inflight = self._pending  # `withdraw` may take keys out while it is written
            self._pending = {}
            upto = self._queued
            changes = {key: self._last_change.get(key, 0) for key in batch}
            for key, value in batch.items():
                self._tried[key] = [*self._tried.get(key, ())[-3:], value]
            try:
                overridden = await self.coordination.write_offsets(dict(batch), self._expected)
            except EtcdError as exc:
                log.warning("cluster: offsets not written to etcd (%s); retrying", exc)
                self._pending = {**batch, **self._pending}
                self._inflight = {}
                self._wake.set()
                await trio.sleep(RETRY_DELAY)
                continue
            for key, value in batch.items():
                if key in overridden:
                    self._overridden(key, overridden[key], changes[key])
                else:
                    self._confirm(key, value)
            self._inflight = {}
            self._written = upto
            self._progress.set()
            self._progress = trio.Event()
            try:
                await self._refresh()
            except EtcdError as exc:
                log.warning("cluster: withdrawn offsets not read from etcd (%s); retrying", exc)
                self._wake.set()
                await trio.sleep(RETRY_DELAY)
