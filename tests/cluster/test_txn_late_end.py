"""A late copy of a transactions-v1 EndTxn (gateway/cluster/txn_state.late_end): v1 ends name only the
producer id and epoch, which all of a producer's transactions share. Seed 2615 of the fault harness
(docs/faults.md): a commit of txn 256 waited in one gateway while the client's retry was answered by
another and the client began txn 261; the waiting copy then committed 261 before one of its records
was written (read_committed saw 783 and 785, not 784). In process, etcd faked (the helpers of
test_txn_leader_check.py)."""
from __future__ import annotations

import trio

from gateway.cluster.txn_fence import CONCURRENT_TRANSACTIONS
from semantics.producer_state import INVALID_TXN_STATE, NONE_ERR
from test_txn_leader_check import PID, TID, FakeEtcd, _coordinating, _ongoing


def _late_end_meets_the_next_transaction(first: dict, commit: bool):
    """An end of (PID, 0) whose first read of the key answers `first` only once the producer's next
    transaction (Ongoing, on t/1) is in etcd: (its answer, the state after)."""
    async def main():
        etcd = FakeEtcd(first)
        etcd.hold_at = 1  # the end's first read: answered once the next transaction began
        txns = _coordinating(etcd)
        answer = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _append(answer, txns.end(TID, PID, 0, commit, tv2=False)))
            await etcd.held.wait()
            etcd.state = {**_ongoing(), "started": 2 ** 62 + 1000, "partitions": [["t", 1]], "marker": [PID, 0],
                          "epochs": {"t/1": [1, 0]}}
            etcd.revision += 1
            etcd.hold.set()
        return answer[0], etcd.state
    return trio.run(main)


async def _append(out: list, call) -> None:
    out.append(await call)


def _in_place() -> dict:
    """The transaction the end was sent for: Ongoing on t/0, its leader unchanged since it joined."""
    return {**_ongoing(), "epochs": {"t/0": [1, 0]}}


def test_a_late_v1_commit_does_not_commit_the_next_transaction():
    """The end was sent for the transaction Ongoing at its first read; another one is Ongoing when it
    writes: refused, and the next transaction stays Ongoing. Before: PrepareCommit of the next one."""
    (code, _pid, _epoch), state = _late_end_meets_the_next_transaction(_in_place(), commit=True)
    assert code == INVALID_TXN_STATE
    assert state["state"] == "Ongoing" and state["partitions"] == [["t", 1]]


def test_a_late_v1_commit_whose_partition_moved_does_not_abort_the_next_transaction():
    """--cluster-txn-layout halves: a commit whose partition changed leader is an abort instead
    (`_moved`); a late one must not abort the next transaction either. Before: CompleteAbort."""
    (code, _pid, _epoch), state = _late_end_meets_the_next_transaction(_ongoing(), commit=True)
    assert code == INVALID_TXN_STATE
    assert state["state"] == "Ongoing" and state["partitions"] == [["t", 1]]


def test_a_late_copy_of_a_decided_commit_is_told_to_retry_and_changes_nothing():
    """First read: its own PrepareCommit (the end decided by the client's retry elsewhere): answered
    at once CONCURRENT_TRANSACTIONS, as Kafka's coordinator answers a retried end while its markers are
    written, and the next transaction stays Ongoing. Before: the copy waited for the completion (here
    done in the request) and answered NONE."""
    decided = {**_in_place(), "state": "PrepareCommit", "marker": [PID, 0]}
    (code, _pid, _epoch), state = _late_end_meets_the_next_transaction(decided, commit=True)
    assert code == CONCURRENT_TRANSACTIONS
    assert state["state"] == "Ongoing" and state["partitions"] == [["t", 1]]


def _end_meeting(state: dict, commit: bool, tv2: bool, epoch: int = 0):
    """An end of (PID, `epoch`) whose one read finds `state`: (its answer, etcd's writes, the state after)."""
    async def main():
        etcd = FakeEtcd(state)
        answer = await _coordinating(etcd).end(TID, PID, epoch, commit, tv2=tv2)
        return answer, etcd.swaps, etcd.state
    return trio.run(main)


def test_a_retried_v1_end_finding_its_end_decided_is_answered_without_waiting():
    """Kafka 4.3.1's coordinator (v1) while the markers wait: CONCURRENT_TRANSACTIONS to a commit and to an
    abort; nothing is written and the decided end is not completed by the request. Before: the request
    completed the end (markers, CompleteCommit) and answered NONE (INVALID_TXN_STATE to the abort)."""
    decided = {**_in_place(), "state": "PrepareCommit", "marker": [PID, 0], "ends": 3}
    (code, _pid, _epoch), swaps, state = _end_meeting(decided, commit=True, tv2=False)
    assert (code, swaps, state["state"]) == (CONCURRENT_TRANSACTIONS, 0, "PrepareCommit")
    (code, _pid, _epoch), swaps, state = _end_meeting(decided, commit=False, tv2=False)
    assert (code, swaps, state["state"]) == (CONCURRENT_TRANSACTIONS, 0, "PrepareCommit")


def test_a_retried_v2_end_finding_its_end_decided_is_answered_without_waiting():
    """v2: the end bumped the epoch (previous = the request's): the same answer."""
    decided = {**_in_place(), "epoch": 1, "state": "PrepareAbort", "marker": [PID, 0], "previous": [PID, 0]}
    (code, _pid, _epoch), swaps, state = _end_meeting(decided, commit=False, tv2=True)
    assert (code, swaps, state["state"]) == (CONCURRENT_TRANSACTIONS, 0, "PrepareAbort")


def test_each_decided_end_gets_the_next_number_for_its_markers():
    """The coordinator epoch of txn_fence: one more at each Prepare, kept across InitProducerId."""
    async def main():
        etcd = FakeEtcd({**_in_place(), "ends": 4})
        txns = _coordinating(etcd)
        await txns.end(TID, PID, 0, True, tv2=False)
        return etcd.state
    assert trio.run(main)["ends"] == 5


def test_a_late_v1_abort_does_not_abort_the_next_transaction():
    (code, _pid, _epoch), state = _late_end_meets_the_next_transaction(_in_place(), commit=False)
    assert code == INVALID_TXN_STATE
    assert state["state"] == "Ongoing" and state["partitions"] == [["t", 1]]


def test_an_end_of_the_transaction_it_found_still_ends_it():
    async def main():
        etcd = FakeEtcd(_in_place())
        assert (await _coordinating(etcd).end(TID, PID, 0, True, tv2=False))[0] == NONE_ERR
        return etcd.state
    assert trio.run(main)["state"] == "CompleteCommit"
