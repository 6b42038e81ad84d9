"""A commit's records appended by the partition's leader that holds the halves, which loses the
partition before its followers copied them (gateway/cluster/txn_ends.py; docs/faults.md, fourth stop,
finding 3: the new leader was elected without them, the old one's copy was cut back, and the
coordinator's retried end found nothing left to do: an acknowledged commit lost). The retried end
must send the cut record again (to the new leader, as a due message), not answer success. In
process, the store, replication and etcd faked."""
from __future__ import annotations

import types

import pytest
import trio

import gateway.cluster.txn_ends as txn_ends
from gateway.cluster.txns import ClusterTxns
from semantics.replication.contract import NotLeader

PID, TID, TP = 1000, "wl-0", ("t", 0)


def _setup(epochs: list, sent: list):
    """A leader of TP in epoch 1 whose acks=all wait fails (fenced) once; `epochs`: its epoch table."""
    leading = types.SimpleNamespace(owns=True, fenced=True)

    async def end_in_turn(_flow, offset, commit, appended=None, **_):
        appended += [(types.SimpleNamespace(topic=TP[0]), types.SimpleNamespace(queue_offset=11)),
                     (types.SimpleNamespace(topic="op"), types.SimpleNamespace(queue_offset=0))]
        return None, types.SimpleNamespace(end_offset=100)

    async def replicated(*_):
        if leading.fenced:
            raise NotLeader("fenced")

    async def durable(_end):
        return None
    transactions = types.SimpleNamespace(end_in_turn=end_in_turn, cursor=0, half=lambda off: ("half", off),
                                         committed_message=lambda half: ("committed", half))
    app = types.SimpleNamespace(config=None, flow=None, transactions=transactions, durable=durable, replicated=replicated,
                                store=types.SimpleNamespace(max_offset=lambda *_: 0),
                                replication=types.SimpleNamespace(
                                    replicates=lambda *_: True, role=lambda *_: types.SimpleNamespace(epoch=1),
                                    epochs=types.SimpleNamespace(entries=lambda *_: list(epochs))))
    node = types.SimpleNamespace(coordination=None, owns=lambda *_: leading.owns)
    txns = ClusterTxns(app, node)
    txns.halves[PID] = [(*TP, 7, 0)]

    async def append_in_turn(_flow, _store, msgs):
        sent.extend(msgs)
        return [types.SimpleNamespace(end_offset=200)]
    return txns, leading, append_in_turn


@pytest.mark.parametrize("new_epoch_start, again", [(11, True), (12, False)])
def test_a_commit_cut_by_a_new_leader_is_sent_again_by_the_retried_end(monkeypatch, new_epoch_start, again):
    """The record at offset 11; the next leader's epoch starts at 11 (it lacked it: cut here) or at
    12 (it had it: kept)."""
    async def main():
        epochs, sent = [(1, 0)], []
        txns, leading, append_in_turn = _setup(epochs, sent)
        monkeypatch.setattr(txn_ends, "append_in_turn", append_in_turn)
        with pytest.raises(NotLeader):  # fenced before the followers had it: the coordinator retries
            await txns.markers(TID, PID, 0, True, [TP])
        leading.owns = False  # another gateway was elected
        with pytest.raises(NotLeader):  # this copy does not know the new epoch yet: not known, retried
            await txns.markers(TID, PID, 0, True, [TP])
        epochs.append((2, new_epoch_start))
        await txns.markers(TID, PID, 0, True, [TP])  # before: success at the first retry, nothing sent
        assert sent == ([("committed", ("half", 7))] if again else [])
        await txns.markers(TID, PID, 0, True, [TP])
        assert len(sent) == (1 if again else 0)  # once
    trio.run(main)


def test_a_commit_its_followers_hold_is_confirmed():
    async def main():
        txns, leading, _ = _setup([(1, 0)], [])
        leading.fenced = False
        await txns.markers(TID, PID, 0, True, [TP])
        assert txns.unconfirmed.commits == {}
    trio.run(main)
