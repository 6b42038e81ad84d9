"""Decided ends of cluster Kafka transactions completed in the background
(gateway/cluster/txn_completion.py): EndTxn answered at the Prepare, the next transaction waiting for
the completion (and writing over a delivered Prepare), a fenced coordinator sending no end, and a
lost coordinator's Prepare completed after a change of members. In process, etcd and the leaders faked
(the helpers of test_txn_leader_check.py)."""
from __future__ import annotations

import types

import trio

from gateway.cluster.txns import ClusterTxns
from test_txn_leader_check import PID, TID, FakeEtcd, _coordinating, _ongoing


def _remote_leaders(etcd: FakeEtcd, call, fenced=lambda: False, nursery=None) -> ClusterTxns:
    """ClusterTxns on node 1 (coordinating every id) whose partitions t/0 and t/1 are led by nodes 2
    and 3, reached through `call(address, command)`."""
    from codec.remoting import ResponseCode
    txns = _coordinating(etcd, assignment=None)
    members = {n: types.SimpleNamespace(remoting_addr=f"n{n}", node_id=n) for n in (1, 2, 3)}

    async def answered(address, cmd):
        await call(address, cmd)
        return types.SimpleNamespace(code=ResponseCode.SUCCESS)
    txns.node = types.SimpleNamespace(coordination=etcd, node_id=1, view=types.SimpleNamespace(members=members),
                                      assignment=lambda t, p: types.SimpleNamespace(leader=2 + p, epoch=0),
                                      fenced=fenced, nursery=nursery, coordinator=lambda _key: members[1])
    txns.transport = types.SimpleNamespace(call=answered)
    return txns


def test_a_fenced_coordinator_sends_no_end():
    """A coordinator fenced (its lease lost: paused past it) sends no end to other gateways' leaders:
    the gateway coordinating the id now completes it (a late copy of a v1 end could otherwise reach
    a leader after the next transaction of the same epoch began there)."""
    from trio.testing import MockClock
    from semantics.producer_state import ClusterUnavailable

    async def main():
        etcd = FakeEtcd({**_ongoing(), "state": "PrepareCommit", "marker": [PID, 0], "partitions": [["t", 0]],
                         "epochs": {"t/0": [2, 0]}})
        sent = []

        async def call(address, _cmd):
            sent.append(address)
        txns = _remote_leaders(etcd, call, fenced=lambda: True)
        try:
            await txns.complete(TID, dict(etcd.state))
        except ClusterUnavailable:
            pass
        assert sent == [] and etcd.state["state"] == "PrepareCommit"  # before: sent to n2 and completed
    trio.run(main, clock=MockClock(autojump_threshold=0))


def test_an_end_is_answered_once_decided_and_the_next_transaction_waits_for_its_completion():
    """EndTxn answers once etcd has the PrepareCommit (Kafka: once its Prepare is logged) while a
    leader's marker is still in flight; the completion runs in the background and the producer's
    next AddPartitionsToTxn waits for it (Kafka answers CONCURRENT_TRANSACTIONS until then). Before:
    EndTxn waited for every leader's marker and the Complete."""
    from trio.testing import MockClock

    async def main():
        etcd = FakeEtcd({**_ongoing(), "partitions": [["t", 0], ["t", 1]], "epochs": {"t/0": [2, 0], "t/1": [3, 0]}})
        release, sent = trio.Event(), []

        async def call(address, _cmd):
            sent.append(address)
            if address == "n3":
                await release.wait()
        async with trio.open_nursery() as nursery:
            txns = _remote_leaders(etcd, call, nursery=nursery)
            with trio.fail_after(1):
                assert await txns.end(TID, PID, 0, True, tv2=True) == (0, PID, 1)
            assert etcd.state["state"] == "PrepareCommit"
            added = []
            nursery.start_soon(lambda: _append(added, txns.add_partitions(TID, PID, 1, [("t", 0)], False)))
            await trio.sleep(5)
            assert added == [] and sorted(sent) == ["n2", "n3"]  # waiting for the end's completion
            release.set()
            await trio.sleep(1)
            assert added == [{("t", 0): 0}] and etcd.state["state"] == "Ongoing"
    trio.run(main, clock=MockClock(autojump_threshold=0))


async def _append(out: list, call) -> None:
    out.append(await call)


def test_the_next_transaction_replaces_a_delivered_end_s_complete():
    """Once the end running here is delivered to every leader, the producer's next transaction starts
    from its Prepare as if completed: one compare-and-swap replaces the Prepare, and the Complete the
    completion was about to write is not needed (one etcd write less per transaction on the producer's
    path). Before: PrepareCommit, CompleteCommit, then Ongoing."""
    from trio.testing import MockClock

    async def main():
        etcd = FakeEtcd({**_ongoing(), "partitions": [["t", 0]], "epochs": {"t/0": [2, 0]}})
        written, sent = [], []
        swap = etcd.swap_txn

        async def recording_swap(tid, revision, state):
            revision = await swap(tid, revision, state)
            if revision:
                written.append(state["state"])
            return revision

        async def call(address, _cmd):
            sent.append(address)
        etcd.swap_txn = recording_swap
        async with trio.open_nursery() as nursery:
            txns = _remote_leaders(etcd, call, nursery=nursery)
            assert await txns.end(TID, PID, 0, True, tv2=True) == (0, PID, 1)
            assert await txns.add_partitions(TID, PID, 1, [("t", 1)], False) == {("t", 1): 0}
            await trio.sleep(1)
        assert sent == ["n2"] and written == ["PrepareCommit", "Ongoing"]
        assert etcd.state["state"] == "Ongoing" and etcd.state["partitions"] == [("t", 1)]
    trio.run(main, clock=MockClock(autojump_threshold=0))


def test_a_decided_end_left_by_a_lost_coordinator_is_completed_without_a_request():
    """A coordinator answered EndTxn at the PrepareCommit and died before its markers: the gateway
    coordinating the id after the change of the live members completes the end on its own (no client
    request needed), as Kafka's new coordinator finishes the Prepare states of the log it loads."""
    from trio.testing import MockClock

    async def main():
        etcd = FakeEtcd({**_ongoing(), "state": "PrepareCommit", "marker": [PID, 0], "partitions": [["t", 0]],
                         "epochs": {"t/0": [2, 0]}})

        async def txn_states(_ids):
            return {TID: dict(etcd.state)}
        etcd.txn_states = txn_states
        sent = []

        async def call(address, _cmd):
            sent.append(address)
        async with trio.open_nursery() as nursery:
            txns = _remote_leaders(etcd, call, nursery=nursery)
            txns.node.view.on_members = lambda fn: None
            nursery.start_soon(txns.completions.sweep)
            await trio.sleep(2)
            nursery.cancel_scope.cancel()
        assert sent == ["n2"] and etcd.state["state"] == "CompleteCommit"  # before: PrepareCommit until asked
    trio.run(main, clock=MockClock(autojump_threshold=0))
