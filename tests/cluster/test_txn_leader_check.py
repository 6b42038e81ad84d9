"""A partition leader's check of a transactional producer (gateway/cluster/txns.py) against an end of
that producer's transaction reaching the leader while the check waits for etcd: the check is redone,
so the batch is refused instead of being taken into a transaction that is already over (where the
next transaction's end of the same producer would have committed it: the torn transaction the anomaly
checker's TV1 cluster run found, docs/transactions-checked.md). And an end commits only its own
epoch's halves: a leftover of an older epoch is rolled back. And a restarted leader finds its halves
of a decided end in the half topic, and a leader forgets a half only once its end is written (an end
refused by a full disk or cut short by a closed connection is done by the retry). In process, etcd
and the store faked."""
from __future__ import annotations

import types

import trio

from codec.kafka import records
from gateway.cluster.txns import ClusterTxns, Verified

PID, TID, TP = 1000, "wl-0", ("t", 0)
INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE = 47, 48


class FakeEtcd:
    """read_txn / swap_txn over one dict; read number `hold_at` reads the state, then waits for
    `hold` to be set before answering it (an answer in flight while the state changes)."""

    def __init__(self, state: dict) -> None:
        self.state, self.revision, self.reads, self.hold_at, self.swaps = state, 1, 0, 0, 0
        self.hold = trio.Event()
        self.held = trio.Event()

    async def read_txn(self, _tid):
        self.reads += 1
        answer = dict(self.state), self.revision
        if self.reads == self.hold_at:
            self.held.set()
            await self.hold.wait()
        return answer

    async def swap_txn(self, _tid, revision, state):
        self.swaps += 1
        if revision != self.revision:
            return False
        self.state, self.revision = state, self.revision + 1
        return self.revision


def _txns(etcd: FakeEtcd, ended: list) -> ClusterTxns:
    async def end_in_turn(_flow, offset, commit, **_):
        ended.append((offset, commit))
        return None, None
    app = types.SimpleNamespace(config=None, flow=None, transactions=types.SimpleNamespace(
        end_in_turn=end_in_turn, cursor=0), store=types.SimpleNamespace(max_offset=lambda *_: 0),
        replication=types.SimpleNamespace(replicates=lambda *_: False), kafka=_plain_topics_only())
    node = types.SimpleNamespace(coordination=etcd, owns=lambda *_: True)
    return ClusterTxns(app, node)


def _plain_topics_only(**kafka) -> types.SimpleNamespace:
    """The Kafka state's diskless-transaction part for a cluster without diskless topics."""
    async def end(_txn_id, state, _commit):
        return [tuple(tp) for tp in state["partitions"]]
    diskless_txns = types.SimpleNamespace(in_bucket=lambda _tp: False, bucket_ends=types.SimpleNamespace(end=end))
    return types.SimpleNamespace(diskless_txns=diskless_txns, **kafka)


def _ongoing() -> dict:
    return {"pid": PID, "epoch": 0, "timeout": 60000, "state": "Ongoing", "started": 2 ** 62,
            "partitions": [list(TP)], "offsets": [], "previous": None, "marker": None}


def test_a_check_that_an_end_overtook_is_redone():
    async def main():
        etcd = FakeEtcd(_ongoing())
        txns = _txns(etcd, [])
        batch = records.build_batch([(0, None, b"v", [])], producer_id=PID, producer_epoch=0, base_sequence=0,
                                    transactional=True)
        etcd.hold_at = 1  # the check's one read: "Ongoing, partition added", answered after the end
        async with trio.open_nursery() as nursery:
            codes = []

            async def check():
                codes.append(await txns.verify(TID, *TP, batch, implicit_add=False))
            nursery.start_soon(check)
            await etcd.held.wait()  # the check's read of "Ongoing, partition added" is on its way back
            etcd.state = dict(_ongoing(), state="CompleteAbort", partitions=[], epoch=1)  # fenced and aborted
            await txns.markers(TID, PID, 0, False, [TP])  # ... and the abort reached this leader
            etcd.hold.set()
        assert codes[-1] == INVALID_PRODUCER_EPOCH  # fenced; before: NONE, and the batch was taken as a half
        assert txns.for_batch(PID, 0, 0, TP, False)[0] == INVALID_TXN_STATE
    trio.run(main)


def test_an_end_rolls_back_a_leftover_of_an_older_epoch():
    async def main():
        ended = []
        txns = _txns(FakeEtcd(_ongoing()), ended)
        txns.verified[PID] = Verified(TID, PID, 3, 60000, {TP})
        txns.halves[PID] = [(*TP, 7, 2), (*TP, 8, 3)]  # 7: a fenced instance's write at epoch 2
        await txns.markers(TID, PID, 3, True, [TP])
        assert sorted(ended) == [(7, False), (8, True)]  # before: both committed
    trio.run(main)


def test_a_restarted_leader_finds_its_halves_of_a_decided_end():
    """After a restart the leader's memory has no halves; an end reaching it reads the producer's
    undecided halves of its partitions from the half topic (others' and decided ones left alone)."""
    from codec.remoting.message import INNER_BATCH_FLAG
    from semantics.routing import PROPERTY_PRODUCER_GROUP, PROPERTY_REAL_QID, PROPERTY_REAL_TOPIC

    def half(offset, group, pid, epoch, topic="t"):
        body = records.build_batch([(0, None, b"v", [])], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                                   transactional=True)
        return types.SimpleNamespace(queue_offset=offset, sys_flag=INNER_BATCH_FLAG, body=body, properties={
            PROPERTY_PRODUCER_GROUP: group, PROPERTY_REAL_TOPIC: topic, PROPERTY_REAL_QID: "0"})
    stored = {4: half(4, TID, PID, 2), 5: half(5, "other", 77, 0), 6: half(6, TID, PID, 2, topic="u"),
              7: half(7, TID, PID, 2), 8: half(8, TID, PID, 2)}

    async def main():
        ended = []
        txns = _txns(FakeEtcd(_ongoing()), ended)
        txns.app.transactions.cursor = 4
        txns.app.transactions.outcome = lambda off: "commit" if off == 8 else None  # 8: decided already
        txns.app.transactions.half = stored.get
        txns.app.store.max_offset = lambda *_: 9
        await txns.markers(TID, PID, 2, True, [TP])
        assert sorted(ended) == [(4, True), (7, True)]  # before: nothing (the halves were only in memory)
    trio.run(main)


def test_a_commit_after_a_partitions_leader_changed_is_an_abort():
    """The halves are the leader's, not replicated: when a partition's leader changed during the
    transaction, EndTxn(commit) aborts it and says so (TRANSACTION_ABORTABLE under TV2), instead of a
    commit that misses the old leader's records; the client's abort then gets the end's answer."""
    async def main():
        ended, assignment = [], types.SimpleNamespace(leader=1, epoch=0)
        txns = _coordinating(FakeEtcd({**_ongoing(), "state": "Empty", "partitions": []}), ended, assignment)
        assert await txns.add_partitions(TID, PID, 0, [TP], verify_only=False) == {TP: 0}
        txns.verified[PID] = Verified(TID, PID, 0, 60000, {TP})
        txns.halves[PID] = [(*TP, 3, 0)]
        assignment.epoch = 1  # the partition's leader changed (this gateway leads it now, without the half)
        code, pid, epoch = await txns.end(TID, PID, 0, True, tv2=True)
        assert code == 120  # before: 0, and the transaction committed
        assert txns.coordination.state["state"] == "CompleteAbort" and ended == [(3, False)]
        assert await txns.end(TID, PID, 0, False, tv2=True) == (0, PID, 1)  # the client's abort
    trio.run(main)


def test_a_decided_end_goes_to_the_gateway_holding_the_halves():
    """The leader changed after the commit was decided: the end goes to the gateway that led the
    partition when it joined (it holds the halves) and commits them there (the commit itself forwards
    the records to the new leader as a due message), not to the new leader, which has none."""
    async def main():
        ended, assignment = [], types.SimpleNamespace(leader=1, epoch=0)
        etcd = FakeEtcd({**_ongoing(), "state": "PrepareCommit", "marker": [PID, 0],
                         "epochs": {"t/0": [1, 0]}})
        txns = _txns(etcd, ended)
        txns.node = types.SimpleNamespace(coordination=etcd, node_id=1, assignment=lambda *_: assignment,
                                          fenced=lambda: False, owns=lambda *_: assignment.leader == 1)
        txns.halves[PID] = [(*TP, 3, 0)]
        assignment.leader, assignment.epoch = 2, 1  # node 2 leads now; node 1 (this one) holds the half
        await txns.complete(TID, dict(etcd.state))
        assert ended == [(3, True)] and etcd.state["state"] == "CompleteCommit"  # before: sent to node 2
    trio.run(main)


def test_an_abort_goes_to_the_partitions_new_leader_too():
    """The partition moved during the transaction and the producer wrote to its new leader, which kept
    those batches as its own halves: an abort goes to the holder and to the new leader (before: the
    holder only, and under transactions v1, whose abort keeps the epoch, the producer's next commit on
    that leader committed the aborted batches: `make faults` seed 4501, transaction 197). A commit
    still goes to the holder alone (a commit after a move is an abort)."""
    async def main():
        sent, assignment = [], types.SimpleNamespace(leader=2, epoch=1)  # node 2 leads now; node 1 held it
        for outcome in ("Abort", "Commit"):
            etcd = FakeEtcd({**_ongoing(), "state": "Prepare" + outcome, "marker": [PID, 0],
                             "epochs": {"t/0": [1, 0]}})
            txns = _txns(etcd, [])
            txns.node = types.SimpleNamespace(coordination=etcd, node_id=3, assignment=lambda *_: assignment)

            async def deliver_to(leader, _tid, _end, commit, tps):
                sent.append((leader, commit, tps))
                return True
            txns._deliver_to = deliver_to
            await txns.complete(TID, dict(etcd.state))
            assert etcd.state["state"] == "Complete" + outcome
        assert sorted(sent) == [(1, False, [TP]), (1, True, [TP]), (2, False, [TP])]  # before: no (2, False)
    trio.run(main)


def test_an_end_that_failed_on_a_full_disk_is_done_by_the_retry():
    """The end's append refused (StoreFull: the leader's disk is full, as in `make faults`
    disk-full): the coordinator retries the end, and the retry must still find the halves. Before,
    they were forgotten before the append, the retry ended nothing and answered success, and the
    transaction checker later rolled the committed half back (a committed transaction lost)."""
    from store.errors import StoreFull

    async def main():
        ended, refuse = [], [True]
        txns = _txns(FakeEtcd(_ongoing()), ended)

        async def end_in_turn(_flow, offset, commit, **_):
            if refuse and offset == 8:
                refuse.clear()
                raise StoreFull("disk full")
            ended.append((offset, commit))
            return None, None
        txns.app.transactions.end_in_turn = end_in_turn
        txns.halves[PID] = [(*TP, 7, 3), (*TP, 8, 3), (*TP, 9, 3)]
        try:
            await txns.markers(TID, PID, 3, True, [TP])
        except StoreFull:
            pass
        await txns.markers(TID, PID, 3, True, [TP])  # the coordinator's retry
        assert sorted(ended) == [(7, True), (8, True), (9, True)]  # before: 8 and 9 never ended
        assert txns.halves[PID] == []
    trio.run(main)


def test_an_end_cut_short_by_the_coordinators_connection_is_done_by_the_retry():
    """The coordinator's connection closes (it was killed, or its call timed out) while this leader
    ends its halves: the remoting handler's task is cancelled between two ends. The next
    coordinator's end must still find the halves not yet ended (before: forgotten, so the
    transaction was left partly committed, then the rest rolled back: `make faults` kill, txn
    aborted_read)."""
    async def main():
        ended, second_started = [], trio.Event()
        txns = _txns(FakeEtcd(_ongoing()), ended)

        async def end_in_turn(_flow, offset, commit, **_):
            if offset == 8 and not second_started.is_set():
                second_started.set()
                await trio.sleep_forever()  # cancelled here
            ended.append((offset, commit))
            return None, None
        txns.app.transactions.end_in_turn = end_in_turn
        txns.halves[PID] = [(*TP, 7, 3), (*TP, 8, 3), (*TP, 9, 3)]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(txns.markers, TID, PID, 3, True, [TP])
            await second_started.wait()
            nursery.cancel_scope.cancel()  # the connection's nursery, closed
        await txns.markers(TID, PID, 3, True, [TP])
        assert sorted(ended) == [(7, True), (8, True), (9, True)]  # before: 8 and 9 never ended
    trio.run(main)


def test_a_retried_v1_commit_of_a_transaction_aborted_instead_is_refused():
    """TV1: EndTxn(commit) after a partition's leader changed is aborted and answered
    INVALID_TXN_STATE; when that answer is lost the client sends the commit again. Kafka answers a
    commit in CompleteAbort INVALID_TXN_STATE; before, the retry was taken as a new (empty) commit and
    answered NONE: an acknowledged commit whose records were rolled back (`make faults` long run,
    transaction 4)."""
    async def main():
        ended, assignment = [], types.SimpleNamespace(leader=1, epoch=0)
        txns = _coordinating(FakeEtcd({**_ongoing(), "state": "Empty", "partitions": []}), ended, assignment)
        assert await txns.add_partitions(TID, PID, 0, [TP], verify_only=False) == {TP: 0}
        txns.halves[PID] = [(*TP, 3, 0)]
        assignment.epoch = 1
        assert (await txns.end(TID, PID, 0, True, tv2=False))[0] == INVALID_TXN_STATE  # aborted instead
        assert txns.coordination.state["state"] == "CompleteAbort" and ended == [(3, False)]
        assert (await txns.end(TID, PID, 0, True, tv2=False))[0] == INVALID_TXN_STATE  # before: NONE
        assert txns.coordination.state["state"] == "CompleteAbort"
        assert (await txns.end(TID, PID, 0, False, tv2=False))[0] == 0  # the client's abort: a retried end
    trio.run(main)


def _coordinating(etcd: FakeEtcd, ended: list | None = None, assignment=None) -> ClusterTxns:
    """ClusterTxns as the coordinator and every partition's leader (node 1; `assignment`: each
    partition's leader and epoch, by default node 1 in epoch 0)."""
    txns = _txns(etcd, [] if ended is None else ended)
    assignment = assignment or types.SimpleNamespace(leader=1, epoch=0)

    async def reserve():
        return None
    txns.node = types.SimpleNamespace(coordination=etcd, node_id=1, owns=lambda *_: True, fenced=lambda: False,
                                      assignment=lambda *_: assignment,
                                      coordinator=lambda _key: types.SimpleNamespace(node_id=1))
    txns.app.ownership = types.SimpleNamespace(reserve_producer_ids=reserve)
    txns.app.kafka = _plain_topics_only(producers=types.SimpleNamespace(allocate=lambda: 5000))
    return txns


def _batch(epoch: int) -> bytes:
    return records.build_batch([(0, None, b"v", [])], producer_id=PID, producer_epoch=epoch, base_sequence=0,
                               transactional=True)


def test_a_transaction_over_four_partitions_costs_one_etcd_read():
    """Transactions v2 through one gateway: each partition's first batch adds it with one
    compare-and-swap from the state this gateway wrote last, the end prepares and completes with
    two more; the key is read once (the end's settled state; the first transaction also reads what
    it starts from). Before: 16 reads, 6 swaps."""
    async def main():
        etcd = FakeEtcd({**_ongoing(), "state": "Empty", "partitions": []})
        txns = _coordinating(etcd)
        for epoch in (0, 1):  # two transactions: the second starts from the first one's Complete
            etcd.reads = etcd.swaps = 0
            for p in range(4):
                assert await txns.verify(TID, "t", p, _batch(epoch), implicit_add=True) == 0
            assert await txns.end(TID, PID, epoch, True, tv2=True) == (0, PID, epoch + 1)
            assert (etcd.reads, etcd.swaps) == (2 - epoch, 6)
            assert etcd.state["state"] == "CompleteCommit"
    trio.run(main)


def test_a_kept_ongoing_state_never_lets_a_fenced_epoch_in():
    """The kept value says "Ongoing at epoch 0, partition added"; etcd says another instance fenced
    epoch 0 meanwhile. A batch of epoch 0 is refused on an added partition (an answer that writes
    nothing is given from a fresh read only) and on a new one (its compare-and-swap fails)."""
    async def main():
        etcd = FakeEtcd(_ongoing())
        txns = _coordinating(etcd)
        txns.etcd_states.kept[TID] = (_ongoing(), etcd.revision)
        etcd.state, etcd.revision = dict(_ongoing(), state="Empty", partitions=[], epoch=1), 2
        for implicit_add in (False, True):
            assert await txns.verify(TID, *TP, _batch(0), implicit_add) == INVALID_PRODUCER_EPOCH
        txns.etcd_states.kept[TID] = (_ongoing(), 1)
        assert await txns.verify(TID, "t", 1, _batch(0), implicit_add=True) == INVALID_PRODUCER_EPOCH
        assert etcd.state["epoch"] == 1 and etcd.state["partitions"] == []
    trio.run(main)


def test_an_end_goes_to_every_leader_at_once():
    """Two other gateways lead the transaction's partitions: the end is sent to both at once (node
    2 answers only once node 3 has its end too). Before: one after the other, so node 2 waited
    and the end was not completed by MARKER_DEADLINE_S."""
    from codec.remoting import ResponseCode
    from trio.testing import MockClock

    async def main():
        etcd = FakeEtcd({**_ongoing(), "state": "PrepareCommit", "marker": [PID, 0], "partitions": [["t", 0], ["t", 1]],
                         "epochs": {"t/0": [2, 0], "t/1": [3, 0]}})
        txns = _txns(etcd, [])
        node3_called, sent = trio.Event(), []

        async def call(address, cmd):
            sent.append(address)
            if address == "n3":
                node3_called.set()
            else:
                await node3_called.wait()
            return types.SimpleNamespace(code=ResponseCode.SUCCESS)
        members = {2: types.SimpleNamespace(remoting_addr="n2"), 3: types.SimpleNamespace(remoting_addr="n3")}
        txns.node = types.SimpleNamespace(coordination=etcd, node_id=1, view=types.SimpleNamespace(members=members),
                                          assignment=lambda t, p: types.SimpleNamespace(leader=2 + p, epoch=0),
                                          fenced=lambda: False)
        txns.transport = types.SimpleNamespace(call=call)
        await txns.complete(TID, dict(etcd.state))
        assert sorted(sent) == ["n2", "n3"] and etcd.state["state"] == "CompleteCommit"
    trio.run(main, clock=MockClock(autojump_threshold=0))


def test_the_kept_values_stay_bounded():
    """One value kept per transactional id, at most KEPT_IDS: the least recently used goes first."""
    from gateway.cluster import txn_state

    async def main():
        states = txn_state.TxnStates(FakeEtcd(_ongoing()))
        for i in range(txn_state.KEPT_IDS + 5):
            await states.read(f"id-{i}")
        await states.read("id-5")  # used again: kept
        await states.read("last")
        assert len(states.kept) == txn_state.KEPT_IDS and "id-5" in states.kept and "id-6" not in states.kept
    trio.run(main)

