"""A follower task whose epoch-end answer arrives after this node stopped following the queue must
not cut the log (seed 69739, docs/faults.md "Findings of the eighth stop"): g2 followed g3 in epoch
7, its question to g3 was answered only after a one-way partition healed, by then g2 led the queue
in epoch 8 and had acknowledged 45 sends past g3's end; the late answer cut them. In process: a real
store, `ReplicaManager` and `Follower`, a transport that holds the answer until the test lets it go."""
from __future__ import annotations

import trio

import store
from codec.remoting.message import Message
from semantics.replication.contract import NONE, FetchAnswer
from semantics.replication.follower import Follower
from semantics.replication.manager import ReplicaManager


def _open(path) -> store.Store:
    return store.open(str(path), store.StoreConfig(commitlog_file_size=1 << 20, index_slots=1000,
                                                   index_entries=4000))


class HeldAnswer:
    """The old leader (g3): epoch 6 ended at offset 2 in its log; the answer waits for `release`."""

    def __init__(self) -> None:
        self.asked = trio.Event()
        self.release = trio.Event()

    async def epoch_end(self, _leader, _topic, _qid, epoch, _replica, _current_epoch):
        self.asked.set()
        await self.release.wait()
        return NONE, epoch, 2

    async def fetch(self, _address, req):
        return FetchAnswer(NONE, epoch=7, high_watermark=2, log_end=2, entries=[], epochs=[(6, 0), (7, 2)])


def test_a_late_epoch_end_answer_does_not_cut_the_new_leaders_log(tmp_path):
    mine = _open(tmp_path / "g2")
    manager = ReplicaManager(mine, "g2:1")
    transport = HeldAnswer()
    follower = Follower(manager, transport)
    try:
        manager.become_leader("t", 0, 6, ["g2:1"])
        for v in (b"0", b"1"):  # offsets 0, 1 in epoch 6
            mine.append(Message("t", 0, v))
        manager.become_follower("t", 0, 7, "g3:1")

        async def main():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(follower._follow, "t", 0)
                await transport.asked.wait()  # the question is out; the answer is held up
                manager.become_leader("t", 0, 8, ["g2:1", "g1:1"])  # g2 is elected meanwhile
                for v in (b"2", b"3", b"4"):  # and writes (acknowledged once g1 has them)
                    mine.append(Message("t", 0, v))
                transport.release.set()  # the partition heals: the old role's answer arrives
                await trio.sleep(0.3)  # the old task acts on it (or drops it) and ends
                nursery.cancel_scope.cancel()

        trio.run(main)
        assert mine.max_offset("t", 0) == 5  # the new leader's entries 2..4 are all still there
        assert [m.body for _q, m in mine.iterate("t", 0, 0)] == [b"0", b"1", b"2", b"3", b"4"]
    finally:
        mine.close()
