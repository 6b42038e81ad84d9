"""A transactions-v1 EndTxn read late by a gateway that is no longer the transactional id's coordinator
(gateway/cluster/txn_fence.coordinates). Seed 74045 of the fault harness (docs/faults.md, txn 305): a
librdkafka EndTxn(commit) of txn 304 sat in a stalled gateway's socket buffer (its event loop stalled
4.9 s) while the client moved to the id's coordinator, retried the end there (committed, answered) and
began txn 305 (value 915 written to partition 0). The stalled gateway then read the stale end; its
first read of the key found txn 305 Ongoing, so it took the end for 305's and committed it (etcd:
Ongoing at revision 4062, PrepareCommit at 4064, then that gateway's member key at 4065); 916 and 917
were refused afterwards and read_committed saw 915 alone. Now a gateway that is not the id's
coordinator in its view, or whose lease may have expired, answers NOT_COORDINATOR, as a Kafka broker
that does not coordinate the id (checked on three Kafka 4.3.1 nodes: test_txn_not_coordinator.py).
In process, etcd faked (the helpers of test_txn_leader_check.py)."""
from __future__ import annotations

import types

import trio

from gateway.cluster.txn_fence import NOT_COORDINATOR
from test_txn_leader_check import PID, TID, FakeEtcd, _coordinating, _ongoing


def _next_transaction() -> dict:
    """txn 305: Ongoing on t/0..t/2 (one of its three records written so far)."""
    return {**_ongoing(), "partitions": [["t", 0], ["t", 1], ["t", 2]], "ends": 213, "marker": [PID, 0],
            "epochs": {f"t/{p}": [1, 0] for p in range(3)}}


def _stale_end(node_id: int = 1, coordinator: int = 1, fenced: bool = False, fenced_at_read: bool = False):
    """The stale EndTxn(commit) of (PID, 0) at a gateway (`node_id`, its view naming `coordinator`,
    `fenced`; `fenced_at_read`: fenced while its first read of the key waits for etcd): (its answer,
    the state after)."""
    async def main():
        etcd = FakeEtcd(_next_transaction())
        txns = _coordinating(etcd)
        flags = {"fenced": fenced}
        txns.node.node_id = node_id
        txns.node.fenced = lambda: flags["fenced"]
        txns.node.coordinator = lambda _key: types.SimpleNamespace(node_id=coordinator)
        answer = []
        async with trio.open_nursery() as nursery:
            if fenced_at_read:
                etcd.hold_at = 1

            async def end():
                answer.append(await txns.end(TID, PID, 0, True, tv2=False))
            nursery.start_soon(end)
            if fenced_at_read:
                await etcd.held.wait()
                flags["fenced"] = True  # the lease deadline passed while etcd answered
                etcd.hold.set()
        return answer[0][0], etcd.state
    return trio.run(main)


def test_a_stale_end_at_a_gateway_whose_lease_may_have_expired_is_refused():
    """The stalled gateway: still the coordinator in its view, its lease not renewed in time.
    Before: PrepareCommit of the next transaction (ends 214), its partitions' markers written."""
    code, state = _stale_end(fenced=True)
    assert code == NOT_COORDINATOR
    assert state["state"] == "Ongoing" and state["ends"] == 213


def test_a_stale_end_at_a_gateway_that_does_not_coordinate_the_id_is_refused():
    """Its view names another coordinator (seed 74045: node 2 coordinated the id). Before: committed."""
    code, state = _stale_end(node_id=1, coordinator=2)
    assert code == NOT_COORDINATOR
    assert state["state"] == "Ongoing" and state["ends"] == 213


def test_a_gateway_fenced_while_etcd_answers_writes_nothing():
    """The check is made again right before the write: a gateway whose lease deadline passes while its
    read is in flight (a stall) refuses. Before: committed."""
    code, state = _stale_end(fenced_at_read=True)
    assert code == NOT_COORDINATOR
    assert state["state"] == "Ongoing" and state["ends"] == 213


def test_the_coordinator_still_ends_the_transaction():
    code, state = _stale_end()
    assert code == 0
    assert state["state"] == "CompleteCommit" and state["ends"] == 214
