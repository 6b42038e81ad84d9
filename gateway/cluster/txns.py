"""Kafka transactions in a cluster (docs/cluster.md, "Kafka transactions").

A transactional id's coordinator state lives in etcd (`txns/<id>`, `cluster.model.txn_key`), not in a gateway:
{pid, epoch, timeout, state, started, partitions, offsets, previous, marker}. Every change is read-modify-
compare-and-swap on the key's revision, and a request is answered only once etcd has its change, so whichever
gateway coordinates the id next (the coordinator that was `kill -9`ed, a coordinator move) finds every
partition added, every TxnOffsetCommit offset and every decided end. A partition leader checks a transactional
batch against that state itself (v2 adds the partition, v1 verifies it) and keeps it as a half in its own half
topic (or, `txn_layout`, in the partition); an end goes to etcd first (PrepareCommit / PrepareAbort), then
each partition's leader gets it (CLUSTER_TXN_MARKERS, or locally), then the offsets go to the offset table,
then CompleteCommit / CompleteAbort. EndTxn is answered once the Prepare is in etcd (and a commit's offsets
in the offset table); the rest runs in the background (txn_completion), and a later request waits for it.
"""
from __future__ import annotations

import dataclasses
import logging
import time

from codec.kafka.records import TRANSACTIONAL, parse_batches
from codec.kafka.schema import DecodeError
from gateway.cluster import txn_fence, txn_halves, txn_layout
from gateway.cluster.txn_completion import Completions, completed
from gateway.cluster.txn_ends import END_RETRIED, UnconfirmedCommits
from gateway.cluster.txn_markers import MarkerTransport, deliver_until, end_targets, send_markers
from gateway.cluster.txn_state import Seen, TxnStates, late_end, producer_check
from gateway.remoting.replica_client import outgoing
from semantics.producer_state import PRODUCER_FENCED, RETRIED, ClusterUnavailable, \
    INVALID_TXN_STATE, MAX_EPOCH, NONE_ERR, UNKNOWN_PRODUCER_ID, reinit_verdict

log = logging.getLogger("rocketgate.cluster")

CONCURRENT_TRANSACTIONS, COORDINATOR_NOT_AVAILABLE, TRANSACTION_ABORTABLE = 51, 15, 120
MARKER_DEADLINE_S = 10.0  # an end not delivered to every leader by then: COORDINATOR_NOT_AVAILABLE, retried
MARKER_RETRY_S = 0.5


class NotCompleted(ClusterUnavailable):
    """The end is decided (in etcd) but not yet delivered everywhere; a retry completes it."""


def _now() -> int:
    return int(time.time() * 1000)


@dataclasses.dataclass
class Verified:
    """What a partition leader knows of a transactional producer whose batches it takes."""
    txn_id: str
    pid: int
    epoch: int
    timeout_ms: int
    partitions: set = dataclasses.field(default_factory=set)


class ClusterTxns:
    """The coordinator side (the transaction requests over etcd) and the partition-leader side."""

    def __init__(self, app, node) -> None:
        self.app = app
        self.node = node
        self.coordination = node.coordination
        self.etcd_states = TxnStates(node.coordination)
        self.transport = MarkerTransport(*outgoing(app.config))
        self.verified: dict[int, Verified] = {}  # producer id -> its current transaction here
        self.halves: dict[int, list] = {}  # producer id -> [(topic, partition, half offset, epoch)]
        self._recovered: set[tuple[str, int]] = set()  # (transactional id, producer id) read from the half topic
        self._markers_seen: dict[int, int] = {}  # producer id -> ends received (a check racing one is redone)
        self.unconfirmed = UnconfirmedCommits(app, node)  # commits appended here, not yet known replicated
        self.completions = Completions(self, app)  # decided ends completed after EndTxn's answer
        self.layout = txn_layout.enabled(app)  # Kafka's layout: records in the partition, markers (txn_layout)

    async def _settled(self, txn_id: str, seen: Seen | None = None, begins: bool = False,
                       at_once: bool = False) -> Seen:
        """The state once no end is half done (a Prepare completed first; `at_once`: else EndInProgress,
        `txn_fence.handed_over`) and a transaction past its timeout is aborted (its producer fenced).
        From `seen` (a kept value); one is acted on only once read fresh. `begins`: for a change that may start a
        transaction (`Completions.settled`)."""
        seen = seen or await self.etcd_states.read(txn_id)
        while (state := seen.state) is not None:
            if state["state"].startswith("Prepare"):
                if seen.fresh or txn_id in self.completions.running:
                    after = await (txn_fence.handed_over(self.completions, txn_id, seen, begins) if at_once else
                                   self.completions.settled(txn_id, seen, begins, MARKER_DEADLINE_S))
                    if after is not None:
                        seen = after
                        continue
            elif state["state"] == "Ongoing" and _now() - state["started"] > state["timeout"]:
                if seen.fresh:
                    await self.abort(txn_id, fence=True, seen=seen)
            else:
                return seen
            seen = await self.etcd_states.read(txn_id)
        return seen

    async def _change_settled(self, txn_id: str, change, at_once: bool = False):
        """`change` (see TxnStates.attempt) on the settled state, from the value kept here when there
        is one; settled again from a fresh read whenever the attempt must be redone."""
        seen = self.etcd_states.last(txn_id)
        while True:
            settled = await self._settled(txn_id, seen, begins=True, at_once=at_once)
            done = await self.etcd_states.attempt(txn_id, change, settled)
            if done is not None:
                return done[0]
            seen = None

    def _fresh_id(self, state: dict | None, limit: int) -> int | None:
        """A new producer id when the id is new or its epoch is at `limit` (else None: ids are not
        spent on requests that keep theirs). The caller has reserved ids (`reserve_producer_ids`)."""
        return self.app.kafka.producers.allocate() if state is None or state["epoch"] >= limit else None

    _check = staticmethod(producer_check)

    @staticmethod
    def _begin(state: dict) -> None:
        if state["state"] != "Ongoing":
            state.update(state="Ongoing", started=_now(), partitions=[], offsets=[], epochs={})

    def _leader_at(self, tp) -> list:
        a = self.node.assignment(*tp)
        return [-1, -1] if a is None else [a.leader, a.epoch]

    def _moved(self, state: dict) -> list:
        """Partitions whose leader changed since they joined (their halves were the old leader's)."""
        epochs, in_bucket = state.get("epochs") or {}, self.app.kafka.diskless_txns.in_bucket  # (no halves there)
        if self.layout:  # the records are replicated with the partition: a new leader commits them too
            return []
        return [tp for tp in state["partitions"] if not in_bucket(tp) and epochs.get(_key(tp)) != self._leader_at(tp)]

    async def states(self, txn_ids=None) -> dict[str, dict]:
        """DescribeTransactions / ListTransactions: the ids' states in etcd (None: all)."""
        return await self.etcd_states.states(txn_ids)

    # ------------------------------------------------------------ coordinator requests
    async def init(self, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None = None) -> tuple[int, int, int]:
        """InitProducerId: abort what is in progress, then the next epoch (a new producer id when new
        or it would overflow). `expected`: the re-initialising client's (producer id, epoch), KIP-360.
        An end decided and not complete: CONCURRENT_TRANSACTIONS, as Kafka 4.3.1 answers."""
        if not txn_fence.coordinates(self.node, txn_id):
            return txn_fence.NOT_COORDINATOR, -1, -1
        await self.app.ownership.reserve_producer_ids()
        try:
            seen = await self._settled(txn_id, at_once=True)
        except txn_fence.EndInProgress:
            return CONCURRENT_TRANSACTIONS, -1, -1
        state = seen.state
        verdict = None if state is None else reinit_verdict(expected, state["pid"], state["epoch"], state.get("last"))
        if verdict == PRODUCER_FENCED:
            return PRODUCER_FENCED, -1, -1
        if verdict == RETRIED:
            return NONE_ERR, state["pid"], state["epoch"]
        if state is not None and state["state"] == "Ongoing":
            seen = await self.abort(txn_id, fence=True, seen=seen)
        fresh = self._fresh_id(state, MAX_EPOCH - 3)  # (the abort above may have bumped it twice)

        def change(s):
            if not txn_fence.coordinates(self.node, txn_id):
                return None, (txn_fence.NOT_COORDINATOR, -1, -1)
            if s is not None and s["state"] not in ("Empty", "CompleteCommit", "CompleteAbort"):
                raise NotCompleted(f"{txn_id} changed meanwhile")
            if s is None or s["epoch"] >= MAX_EPOCH - 1:
                if fresh is None:
                    raise NotCompleted(f"{txn_id} changed meanwhile")
                pid, epoch = fresh, 0
            else:
                pid, epoch = s["pid"], s["epoch"] + 1
            new = {"pid": pid, "epoch": epoch, "timeout": timeout_ms, "state": "Empty", "started": None,
                   "partitions": [], "offsets": [], "previous": None, "marker": None,
                   "last": None if s is None else [s["pid"], s["epoch"]], "ends": 0 if s is None else s.get("ends", 0)}
            return new, (NONE_ERR, pid, epoch)
        return (await self.etcd_states.update(txn_id, change, seen))[0]

    async def add_partitions(self, txn_id: str, pid: int, epoch: int, asked: list, verify_only: bool,
                             request: bool = False) -> dict:
        """AddPartitionsToTxn (`request`: to the coordinator, answered at once) or a partition leader's
        check of a batch: tp -> error code."""
        try:
            return (await self._add_partitions(txn_id, pid, epoch, asked, verify_only, request))[0]
        except txn_fence.EndInProgress as decided:
            return dict.fromkeys(asked, decided.answer(pid, epoch))

    async def _add_partitions(self, txn_id: str, pid: int, epoch: int, asked: list, verify_only: bool,
                              request: bool = False):
        """(tp -> error code, the transaction's timeout in ms or None)."""
        def change(s):
            if request and not txn_fence.coordinates(self.node, txn_id):
                return None, (dict.fromkeys(asked, txn_fence.NOT_COORDINATOR), None)
            code = self._check(s, pid, epoch)
            timeout = None if s is None else s["timeout"]
            if code != NONE_ERR:
                return None, (dict.fromkeys(asked, code), timeout)
            if s["state"].startswith("Prepare"):
                return None, (dict.fromkeys(asked, CONCURRENT_TRANSACTIONS), timeout)
            have = {tuple(tp) for tp in s["partitions"]} if s["state"] == "Ongoing" else set()
            if verify_only:
                return None, ({tp: NONE_ERR if tp in have else TRANSACTION_ABORTABLE for tp in asked}, timeout)
            if set(asked) <= have:
                return None, (dict.fromkeys(asked, NONE_ERR), timeout)
            self._begin(s)
            s["partitions"] = sorted(have | set(asked))
            # each partition's [leader, epoch] when it joined: its halves are that leader's (`_moved`, `_deliver`)
            s["epochs"] = {**(s.get("epochs") or {}), **{_key(tp): self._leader_at(tp) for tp in set(asked) - have}}
            return s, (dict.fromkeys(asked, NONE_ERR), timeout)
        return await self._change_settled(txn_id, change, at_once=request)

    async def add_offsets(self, txn_id: str, pid: int, epoch: int, offsets: list | None) -> int:
        """AddOffsetsToTxn (offsets None: to the coordinator) and TxnOffsetCommit (offsets to commit
        with it, to the group's coordinator); txn_fence.EndInProgress."""
        def change(s):
            if offsets is None and not txn_fence.coordinates(self.node, txn_id):
                return None, txn_fence.NOT_COORDINATOR
            code = self._check(s, pid, epoch)
            if code != NONE_ERR:
                return None, code
            if s["state"].startswith("Prepare"):
                return None, CONCURRENT_TRANSACTIONS
            self._begin(s)
            s["offsets"] = s["offsets"] + [list(o) for o in offsets or ()]
            return s, NONE_ERR
        return await self._change_settled(txn_id, change, at_once=True)

    async def end(self, txn_id: str, pid: int, epoch: int, commit: bool, tv2: bool,
                  first: Seen | None = None) -> tuple[int, int, int]:
        """EndTxn: (error, producer id, epoch to use next). Decided in etcd first, then completed.
        `first`: the key's state at the request's first read (v1: the transaction it is for, `late_end`)."""
        outcome = "Commit" if commit else "Abort"
        if not txn_fence.coordinates(self.node, txn_id):
            return txn_fence.NOT_COORDINATOR, pid, epoch
        first = first or await self.etcd_states.read(txn_id)
        decided = txn_fence.decided_answer(first.state, pid, epoch, tv2)
        if decided is not None:  # answered at once, as Kafka (a copy held here could outlive the transaction)
            self.completions.resume(txn_id, first)
            return decided, pid, epoch
        await self.app.ownership.reserve_producer_ids()
        seen = await self._settled(txn_id, first)
        state = seen.state
        if state is not None and tuple(state.get("previous") or ()) == (pid, epoch) and tv2:
            if state["state"] == "Complete" + outcome:  # a retried v2 end whose answer was lost
                return NONE_ERR, state["pid"], state["epoch"]
        if commit and state is not None and state["state"] == "Ongoing" and self._check(state, pid, epoch) == NONE_ERR \
                and self._moved(state):  # aborted instead, and the client told so: nothing committed is lost
            code, pid, epoch = await self.end(txn_id, pid, epoch, False, tv2, first)
            return (TRANSACTION_ABORTABLE if tv2 else INVALID_TXN_STATE) if code == NONE_ERR else code, pid, epoch
        fresh = self._fresh_id(state, MAX_EPOCH - 1) if tv2 else None

        def change(s):
            if not txn_fence.coordinates(self.node, txn_id):
                return None, (txn_fence.NOT_COORDINATOR, pid, epoch)
            code = self._check(s, pid, epoch)
            if code != NONE_ERR:
                return None, (code, pid, epoch)
            if tv2 and epoch >= MAX_EPOCH - 1 and fresh is None:
                raise NotCompleted(f"{txn_id} changed meanwhile")
            if not tv2 and (late := late_end(first.state, s, outcome)) is not None:
                return None, (late, pid, epoch)
            if not tv2 and s["state"] != "Ongoing":  # v1, as Kafka: a retried end; else refused (a commit aborted)
                code = txn_fence.decided_answer(s, pid, epoch, tv2)
                return None, (code or (NONE_ERR if s["state"] == "Complete" + outcome else INVALID_TXN_STATE), pid, epoch)
            if s["state"] != "Ongoing":
                s.update(partitions=[], offsets=[])
            s.update(state="Prepare" + outcome, marker=[pid, epoch], offsets=s["offsets"] if commit else [])
            txn_fence.number_end(s)
            if tv2:  # every end bumps the epoch: a late write or retry of this transaction is fenced
                s["previous"] = [pid, epoch]
                s["pid"], s["epoch"] = (fresh, 0) if epoch >= MAX_EPOCH - 1 else (pid, epoch + 1)
            return s, (NONE_ERR, s["pid"], s["epoch"])
        result, seen = await self.etcd_states.update(txn_id, change, seen)
        if result[0] == NONE_ERR and seen.state["state"].startswith("Prepare"):
            # answered now, as Kafka once its Prepare is logged; markers and Complete in the background
            if not self.completions.start(txn_id, seen):
                await self.complete(txn_id, seen.state, seen.revision)
            elif seen.state["offsets"]:  # in the offset table before the answer (no UNSTABLE_OFFSET_COMMIT here)
                await self.completions.commit_offsets(seen.state["offsets"])
        return result

    async def abort(self, txn_id: str, fence: bool, seen: Seen | None = None) -> Seen:
        """Abort the transaction in progress (timed out, or a new InitProducerId), bumping the epoch;
        the state after. `seen`: a fresh read to start from."""
        def change(s):
            if s is None or s["state"] != "Ongoing":
                return None, None
            marker = [s["pid"], s["epoch"]]
            if fence:
                s["epoch"] += 1
            s.update(state="PrepareAbort", marker=marker, offsets=[])
            txn_fence.number_end(s)
            return s, None
        _, seen = await self.etcd_states.update(txn_id, change, seen)
        if seen.state is not None and seen.state["state"] == "PrepareAbort":
            await self.completions.complete_here(txn_id, seen, MARKER_DEADLINE_S)
            return await self.etcd_states.read(txn_id)
        return seen

    async def complete(self, txn_id: str, state: dict, revision: int = 0, hand_over=None) -> Seen:
        """Deliver a decided end to every leader, commit its offsets, then Complete (unless `hand_over()`: the
        next transaction's write replaces it); the state after. `revision`: the key's when it held `state`."""
        commit = state["state"] == "PrepareCommit"
        pid, epoch = state["marker"]
        # diskless partitions: staged batches applied (or dropped) here, from the bucket; the rest's halves delivered
        others = await self.app.kafka.diskless_txns.bucket_ends.end(txn_id, state, commit)
        await self._deliver(txn_id, (pid, epoch, txn_fence.coordinator_epoch(state)), commit, others,
                            state.get("epochs") or {})
        if commit and state["offsets"]:
            await self.completions.commit_offsets(state["offsets"])
        if hand_over is not None and hand_over():
            return Seen(state, revision, False)

        def change(s):  # (`started` kept: the last start, for DescribeTransactions)
            if s is None or s["state"] != state["state"] or s.get("marker") != state["marker"]:
                return None, None
            return completed(s), None
        return (await self.etcd_states.update(txn_id, change, Seen(state, revision, False) if revision else None))[1]

    async def _deliver(self, txn_id: str, end: tuple, commit: bool, partitions: list, holders: dict) -> None:
        """The gateway holding each partition's halves (its leader when it joined) ends them; one that
        no longer leads it forwards a commit to the leader as a due message; an abort goes to the
        partition's leader too (`txn_markers.end_targets`). Retried until MARKER_DEADLINE_S."""
        left = await deliver_until(
            set(partitions), lambda tp: end_targets(holders.get(_key(tp)) or [-1, -1], self._leader_at(tp)[0],
                                                    commit, self.layout),
            lambda leader, tps: self._deliver_to(leader, txn_id, end, commit, tps), MARKER_DEADLINE_S, MARKER_RETRY_S)
        if left:
            raise NotCompleted(f"no leader took the end of {txn_id} for {sorted(left)}")

    async def _deliver_to(self, leader: int, txn_id, end: tuple, commit, tps) -> bool:
        """`end`: (producer id, epoch, coordinator epoch: the end's number, `txn_fence`)."""
        if leader == self.node.node_id:
            try:  # a full disk here, or records not yet replicated: retried, as a remote leader's SYSTEM_ERROR is
                await self.markers(txn_id, end[0], end[1], commit, tps, end[2])
            except END_RETRIED:
                return False
            return True
        member = self.node.view.members.get(leader)
        if member is None or self.node.fenced():  # (fenced: another gateway may complete the end now)
            return False
        return await send_markers(self.transport, member.remoting_addr, leader, txn_id, end, commit, tps)

    # ------------------------------------------------------------ partition leader side
    async def verify(self, txn_id: str | None, topic: str, partition: int, data, implicit_add: bool) -> int:
        """Before a Produce's write turn: the transactional batches' producer may write to this
        partition (added by now; Produce v12+ adds it). NONE, or the partition's error."""
        try:
            batches = [b for b in parse_batches(data or b"") if b.attributes & TRANSACTIONAL]
        except DecodeError:
            return NONE_ERR  # answered by the produce itself
        tp = (topic, partition)
        for b in batches:
            code = await self._verify_batch(txn_id, b.producer_id, b.producer_epoch, tp, implicit_add)
            if code != NONE_ERR:
                return code
        return NONE_ERR

    async def _verify_batch(self, txn_id: str | None, pid: int, epoch: int, tp: tuple, implicit_add: bool) -> int:
        while True:
            known = self.verified.get(pid)
            if known is not None and known.epoch == epoch and tp in known.partitions:
                return NONE_ERR
            if not txn_id:
                return UNKNOWN_PRODUCER_ID
            markers_seen = self._markers_seen.get(pid, 0)
            try:
                codes, timeout = await self._add_partitions(txn_id, pid, epoch, [tp], verify_only=not implicit_add)
                code = codes[tp]
            except ClusterUnavailable:
                return COORDINATOR_NOT_AVAILABLE
            if self._markers_seen.get(pid, 0) != markers_seen:
                continue  # an end reached this leader meanwhile: what was checked may be over, check again
            if code == TRANSACTION_ABORTABLE:
                code = INVALID_TXN_STATE
            if code != NONE_ERR or timeout is None:
                return code or UNKNOWN_PRODUCER_ID
            known = self.verified.get(pid)
            if known is None or known.epoch != epoch or known.txn_id != txn_id:
                known = self.verified[pid] = Verified(txn_id, pid, epoch, timeout)
            known.partitions.add(tp)
            return NONE_ERR

    def for_batch(self, pid: int, epoch: int, _now_ms: int, partition: tuple, _implicit: bool):
        """(error, verified) for a batch checked by `verify` (the write turn's synchronous check)."""
        known = self.verified.get(pid)
        if known is None or known.epoch != epoch or partition not in known.partitions:
            return INVALID_TXN_STATE, None
        return NONE_ERR, known

    def stored(self, known: Verified, partition: tuple, offsets) -> None:
        self.halves.setdefault(known.pid, []).extend((*partition, o, known.epoch) for o in offsets)

    async def markers(self, txn_id: str, pid: int, epoch: int, commit: bool, partitions,
                      coordinator_epoch: int | None = None) -> None:
        """End this leader's halves of producer `pid` on `partitions`: those of `epoch` as decided, any
        older one left over (a write of a fenced instance) rolled back; durable and in the in-sync
        replicas. Kafka's layout: the markers, none where the end is fenced (`txn_fence`)."""
        wanted = {tuple(tp) for tp in partitions}
        self._markers_seen[pid] = self._markers_seen.get(pid, 0) + 1
        self._recover(txn_id, pid)
        known = self.verified.get(pid)
        if known is not None and known.epoch <= epoch:
            known.partitions -= wanted
        mine = [h for h in self.halves.get(pid, ()) if (h[0], h[1]) in wanted and h[3] <= epoch]
        ends = []
        for half in mine:  # each forgotten only once ended: an end that fails (a full disk) is retried
            r = await self.unconfirmed.end(*half[:3], commit and half[3] == epoch)
            self.halves[pid] = [h for h in self.halves.get(pid, ()) if h != half]
            if r is not None:
                ends.append(r)
        if ends:
            await self.app.durable(max(r.end_offset for r in ends))
        await self.unconfirmed.confirm(wanted)  # (a queue led elsewhere got its records forwarded)
        if self.layout:
            await txn_layout.write_markers(self.app, self.node, pid, epoch, commit, wanted, coordinator_epoch)

    def _recover(self, txn_id: str, pid: int) -> None:
        """Once per (transactional id, producer) in this process: its undecided halves from the half
        topic, which a restart took out of memory (a decided end may reach this leader after one)."""
        if (txn_id, pid) in self._recovered:
            return
        self._recovered.add((txn_id, pid))
        txn_halves.recover(self.app, self.halves, txn_id, pid)

    async def check(self, producer_group: str, half, _body: bytes) -> bool:
        """Transaction checker for halves past their transaction's timeout: a transaction still
        Ongoing is aborted through etcd (its producer fenced); a half whose transaction is over (or
        unknown to this process) is rolled back; one whose end is decided waits for its marker.
        False for groups that are not Kafka transactional ids."""
        try:
            state = (await self.etcd_states.read(producer_group)).state
        except ClusterUnavailable:
            return True  # asked again at the next round
        if state is None:
            return False
        fields = txn_halves.producer(half)
        if fields is None:
            return False
        if state["state"].startswith("Prepare") and list(state["marker"]) == list(fields):
            return True  # decided: its leader's marker is on its way
        if state["state"] == "Ongoing" and (state["pid"], state["epoch"]) == fields:
            await self.abort(producer_group, fence=True)
            return True
        for pid, hs in self.halves.items():
            self.halves[pid] = [h for h in hs if h[2] != half.queue_offset]
        await self.app.transactions.end_in_turn(self.app.flow, half.queue_offset, False, producer_group=producer_group)
        return True


def _key(tp) -> str:  # a partition as a JSON object key
    return f"{tp[0]}/{tp[1]}"

