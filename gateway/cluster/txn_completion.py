"""Decided ends of cluster Kafka transactions completed in the background (docs/cluster.md, "Kafka
transactions"), as Kafka's coordinator answers EndTxn once PrepareCommit / PrepareAbort is in its
log and writes the markers afterwards.

The EndTxn's gateway answers once etcd has the Prepare state (and, for a commit, its offsets are in
the offset table) and completes the end here: the markers to every partition leader, then
CompleteCommit / CompleteAbort, retried until done while it coordinates the id. A request that finds a
Prepare state waits for that completion instead of answering (Kafka answers CONCURRENT_TRANSACTIONS
and the client retries): on the coordinating gateway it waits for the task running here (started now
if none is: a restarted or new coordinator recovers the end); on another gateway (a partition
leader checking the next transaction's batch) it reads the key until the state moves on, and after
FOREIGN_WAIT_S completes the end itself. Whenever the live members change, each gateway also looks
for Prepare states of the ids it now coordinates and completes them (a coordinator `kill -9`ed
after answering)."""
from __future__ import annotations

import logging
import math
import time

import trio

from gateway.cluster.txn_state import Seen
from semantics.producer_state import ClusterUnavailable

log = logging.getLogger("rocketgate.cluster")

FOREIGN_WAIT_S = 3.0  # a Prepare another gateway completes, waited for this long before completing it here
RETRY_S = 0.5  # between tries of a completion that failed (a leader down, etcd unreachable)
OVERDUE_SWEEP_S = 1.0  # Kafka's layout: how often the coordinator looks for transactions past their timeout
SWEEP_DELAY_S = 0.5  # after a change of the live members, before looking for Prepare states


def is_prepare(state: dict | None) -> bool:
    return state is not None and state["state"].startswith("Prepare")


def completed(state: dict) -> dict:
    """A Prepare state once its end is delivered everywhere: CompleteCommit / CompleteAbort."""
    return {**state, "state": "Complete" + state["state"][len("Prepare"):], "partitions": [], "offsets": []}


class _Completion:
    """One end being completed here: the Prepare's revision (0: none to hand over), `delivered` set
    once its markers and offsets are done, `takers` the requests waiting for that to start the next
    transaction over the Prepare (`handed_over`: the Complete is theirs to replace), `done` set once
    the task stopped."""

    def __init__(self, revision: int) -> None:
        self.revision, self.delivered, self.done = revision, trio.Event(), trio.Event()
        self.takers, self.handed_over = 0, False

    def hand_over(self) -> bool:
        """Delivered: True when a waiting request's write is to replace the Complete."""
        self.handed_over = self.takers > 0 and self.revision > 0
        self.delivered.set()
        return self.handed_over


class Completions:
    """The completions running on this gateway, one per transactional id."""

    def __init__(self, txns, app) -> None:
        self.txns, self.app = txns, app
        self.running: dict[str, _Completion] = {}  # transactional id -> its completion running here
        self._sweep_wanted = trio.Event()
        self._aborting: set[str] = set()  # ids whose overdue transaction is being aborted here

    def _background(self) -> trio.Nursery | None:
        """The cluster service's nursery (None before it runs, and for a node without one: in-process
        tests' fakes); without it an end is completed before its answer, as before this module."""
        return getattr(self.txns.node, "nursery", None)

    def coordinated_here(self, txn_id: str) -> bool:
        node = self.txns.node
        return node.coordinator(txn_id).node_id == node.node_id

    def start(self, txn_id: str, seen) -> bool:
        """Complete `seen` (a Prepare state just read or written) in the background; False when there
        is no background here: the caller completes it."""
        if txn_id in self.running:
            return True
        nursery = self._background()
        if nursery is None:
            return False
        self.running[txn_id] = _Completion(seen.revision)
        nursery.start_soon(self._run, txn_id, seen)
        return True

    def resume(self, txn_id: str, seen) -> None:
        """A request found the Prepare `seen` and is answered without waiting: its completion is
        started here when none runs and this gateway coordinates the id (a restarted coordinator)."""
        if self._background() is not None and txn_id not in self.running and self.coordinated_here(txn_id):
            self.start(txn_id, seen)

    async def delivered(self, txn_id: str, seen, deadline_s: float) -> Seen | None:
        """For a change that starts a transaction (its compare-and-swap proves the key unchanged):
        once the completion running here of the Prepare `seen` has delivered the end, that Prepare
        taken as completed (not fresh; at its revision), so the next transaction's first write also
        replaces the Complete this completion is about to write, one etcd write less on the
        producer's path. None when no completion here is at that revision."""
        running = self.running.get(txn_id)
        if running is None or not running.revision or running.revision != seen.revision:
            return None
        running.takers += 1
        try:
            with trio.move_on_after(deadline_s) as waited:
                await running.delivered.wait()
        finally:
            running.takers -= 1
        if running.handed_over:
            return Seen(completed(seen.state), seen.revision, False)
        if waited.cancelled_caught:
            raise ClusterUnavailable(f"the end of {txn_id} is not delivered yet")
        return None

    async def commit_offsets(self, offsets: list) -> None:
        """A decided commit's TxnOffsetCommit offsets into the offset table, durable and in etcd."""
        for group, topic, partition, offset, metadata in offsets:
            self.app.offsets.commit(group, topic, partition, offset, metadata)
        self.app.offsets.persist()
        await self.app.offsets.wait_durable()
        if not await self.app.offsets.wait_mirrored():
            raise ClusterUnavailable("offsets not in etcd")

    async def settled(self, txn_id: str, seen, begins: bool, deadline_s: float) -> Seen | None:
        """For `ClusterTxns._settled`, which met the Prepare state `seen`: the state to go on from once
        its end is completed (the Complete written here, or the Prepare taken as completed when
        `begins`: `delivered`), None when the key must be read again."""
        after = await self.delivered(txn_id, seen, deadline_s) if begins else None
        if after is None:
            await self.settle(txn_id, seen, deadline_s)
            after = self.txns.etcd_states.last(txn_id)
            after = after if after is not None and after.revision > seen.revision else None
        return after

    async def settle(self, txn_id: str, seen, deadline_s: float) -> None:
        """Return once the Prepare state `seen` was completed or left (the caller reads the key
        again); raises ClusterUnavailable when it is not within `deadline_s`."""
        if txn_id in self.running or self._background() is None or self.coordinated_here(txn_id):
            await self.complete_here(txn_id, seen, deadline_s)
        else:
            await self._wait_foreign(txn_id, seen)

    async def complete_here(self, txn_id: str, seen, deadline_s: float) -> None:
        """Complete `seen` by this gateway's task for the id (started if none runs), waiting for it."""
        if not self.start(txn_id, seen):
            await self.txns.complete(txn_id, seen.state, seen.revision)
            return
        running = self.running.get(txn_id)
        with trio.move_on_after(deadline_s):
            if running is not None:
                await running.done.wait()
            return
        raise ClusterUnavailable(f"the end of {txn_id} is not completed yet")

    async def _wait_foreign(self, txn_id: str, seen) -> None:
        """Another gateway coordinates the id: read the key until the state moves on; past
        FOREIGN_WAIT_S (that gateway gone or stuck) complete the end here, as before this module."""
        pause = 0.01
        with trio.move_on_after(FOREIGN_WAIT_S):
            while True:
                await trio.sleep(pause)
                pause = min(pause * 2, 0.2)
                if (await self.txns.etcd_states.read(txn_id)).revision != seen.revision:
                    return
        await self.txns.complete(txn_id, seen.state, seen.revision)

    async def _run(self, txn_id: str, seen) -> None:
        running = self.running[txn_id]
        try:
            while True:
                try:
                    await self.txns.complete(txn_id, seen.state, seen.revision, running.hand_over)
                    return
                except Exception as exc:  # noqa: BLE001 - retried: must not end the cluster service
                    log.info("cluster: completing the end of %s failed (%s); retrying", txn_id, exc)
                await trio.sleep(RETRY_S)
                if not self.coordinated_here(txn_id):
                    return  # its new coordinator completes it
                try:
                    now = await self.txns.etcd_states.read(txn_id)
                except ClusterUnavailable:
                    continue
                if not is_prepare(now.state) or now.state.get("marker") != seen.state.get("marker"):
                    return
                if now.revision != running.revision:  # (not the Prepare the takers wait for: none handed over)
                    running.revision = 0
                seen = now
        finally:
            del self.running[txn_id]
            running.delivered.set()
            running.done.set()

    async def sweep(self) -> None:
        """Forever: after each change of the live members, complete the Prepare states of the ids
        this gateway coordinates that no completion here has (their coordinator was lost). Once at
        start too: ends a `kill -9` left undelivered."""
        self.txns.node.view.on_members(lambda _members: self._sweep_wanted.set())
        self._sweep_wanted.set()
        every = OVERDUE_SWEEP_S if getattr(self.txns, "layout", False) else math.inf
        while True:
            with trio.move_on_after(every):
                await self._sweep_wanted.wait()
            await trio.sleep(SWEEP_DELAY_S)
            self._sweep_wanted = trio.Event()
            try:
                states = await self.txns.etcd_states.states()
            except ClusterUnavailable:
                self._sweep_wanted.set()
                continue
            for txn_id, state in states.items():
                if is_prepare(state) and txn_id not in self.running and self.coordinated_here(txn_id):
                    log.info("cluster: completing the decided end of %s (%s)", txn_id, state["state"])
                    self.start(txn_id, Seen(state, 0, True))  # (revision 0: read before the Complete)
                elif every < math.inf and _overdue(state) and txn_id not in self._aborting \
                        and self.coordinated_here(txn_id):
                    self._aborting.add(txn_id)
                    self._background().start_soon(self._abort_overdue, txn_id)

    async def _abort_overdue(self, txn_id: str) -> None:
        """Kafka's layout in a cluster: a transaction Ongoing past its timeout holds its partitions'
        last stable offset, and no half comes up for check-back, so the coordinator aborts it (its
        producer fenced), as Kafka's coordinator does (docs/cluster-txn-layout.md)."""
        try:
            seen = await self.txns.etcd_states.read(txn_id)
            if _overdue(seen.state):
                log.info("cluster: aborting %s, past its transaction timeout", txn_id)
                await self.txns.abort(txn_id, fence=True, seen=seen)
        except Exception as exc:  # noqa: BLE001 - the next sweep tries again
            log.info("cluster: aborting the overdue %s failed (%s)", txn_id, exc)
        finally:
            self._aborting.discard(txn_id)


def _overdue(state: dict | None) -> bool:
    return state is not None and state["state"] == "Ongoing" and \
        time.time() * 1000 - (state.get("started") or 0) > state["timeout"]
