"""A follower derives Kafka's transaction state from the entries it fetches and undoes it when the
epoch rule cuts its log (docs/cluster-txn-layout.md), in process: a leader's store, a follower's store
and `Follower` with a transport that answers from the leader's store."""
from __future__ import annotations

import trio

import store
from codec.kafka import records
from interop.inner_batch import NOT_INDEXED, entry_message, index_info
from interop.txn_visibility import TxnVisibility
from semantics.replication.contract import NONE, FetchAnswer
from semantics.replication.follower import Follower
from semantics.replication.manager import ReplicaManager


def _open(path) -> store.Store:
    return store.open(str(path), store.StoreConfig(commitlog_file_size=1 << 20, index_slots=1000,
                                                   index_entries=4000))


def _data(pid: int):
    b = records.parse_batches(records.build_batch([(0, b"k", b"v", [])], producer_id=pid, producer_epoch=0,
                                                  base_sequence=0, transactional=True))[0]
    return entry_message("t", 0, b, index_info(b), {}, 1000, False)


def _marker(pid: int, commit: bool):
    b = records.parse_batches(records.control_batch(commit, pid, 0, 1000))[0]
    return entry_message("t", 0, b, NOT_INDEXED, {}, 1000, False)


class FromStore:
    """The leader's answers: its entries from the asked offset, in epoch 1."""

    def __init__(self, leader: store.Store) -> None:
        self.leader = leader

    async def fetch(self, _address, req):
        entries = [m for _q, m in self.leader.iterate("t", 0, req.offset)]
        end = self.leader.max_offset("t", 0)
        return FetchAnswer(NONE, epoch=1, high_watermark=end, log_end=end, entries=entries, epochs=[(1, 0)])


def test_a_follower_derives_the_state_and_a_cut_undoes_it(tmp_path):
    leader, mine = _open(tmp_path / "l"), _open(tmp_path / "f")
    derived = TxnVisibility()
    manager = ReplicaManager(mine, "f:1")
    manager.derive = derived
    manager.become_follower("t", 0, 1, "l:1")
    follower = Follower(manager, FromStore(leader))
    role = manager.roles[("t", 0)]
    try:
        for m in [_data(7), _data(8), _marker(7, False), _marker(8, True), _data(9)]:  # offsets 0..4
            leader.append(m)
        trio.run(follower._fetch_once, "t", 0, role, role.generation)
        assert mine.max_offset("t", 0) == 5
        assert derived.open == {("t", 0): {9: 4}} and derived.aborted_in("t", 0, 0, 5) == [(7, 0)]
        follower._truncate("t", 0, 3)  # the epoch rule cut the commit of 8 and the batch of 9
        assert derived.open == {("t", 0): {8: 1}} and derived.aborted_in("t", 0, 0, 5) == [(7, 0)]
        follower._truncate("t", 0, 2)  # and the abort of 7: open again, no longer aborted
        assert derived.open == {("t", 0): {7: 0, 8: 1}} and derived.aborted_in("t", 0, 0, 5) == []
        assert derived.stable_end("t", 0, mine.max_offset("t", 0)) == 0
    finally:
        leader.close()
        mine.close()
