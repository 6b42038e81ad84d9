"""Snapshots of a cluster replica's derived Kafka transaction state (gateway.cluster.txn_snapshots,
docs/cluster-txn-layout.md "Snapshots"): a start restores each queue's snapshot and replays only the
entries after it, to the state a whole replay derives; a torn, foreign or stale snapshot (a log cut
below it and grown again) is ignored, never trusted."""
from __future__ import annotations

import contextlib
import os

import trio

import store
from codec.kafka import records
from gateway.cluster import txn_snapshots
from gateway.cluster.txn_layout import _marker_due, replay
from gateway.cluster.txn_snapshots import Derived, Snapshots
from interop.inner_batch import NOT_INDEXED, entry_message, index_info
from interop.txn_visibility import VISIBLE


def _open(path) -> store.Store:
    return store.open(str(path), store.StoreConfig(commitlog_file_size=1 << 20, index_slots=1000,
                                                   index_entries=4000))


def _data(pid: int | None, value: bytes = b"v"):
    b = records.parse_batches(records.build_batch(
        [(0, b"k", value, [])], producer_id=-1 if pid is None else pid, producer_epoch=0 if pid is not None else -1,
        base_sequence=0 if pid is not None else -1, transactional=pid is not None))[0]
    return entry_message("t", 0, b, index_info(b), {}, 1000, False)


def _marker(pid: int, commit: bool, number: int = 0):
    b = records.parse_batches(records.control_batch(commit, pid, 0, 1000, number))[0]
    return entry_message("t", 0, b, NOT_INDEXED, {}, 1000, False)


def _append(s, msgs) -> None:
    for m in msgs:
        r = s.append(m)
        VISIBLE.appended("t", 0, r.queue_offset, m)


def _state():
    return VISIBLE.queue_state("t", 0)


class Quiet:
    offloaded = 0


def _snapshot(s) -> Snapshots:
    snaps = Snapshots(s)
    assert trio.run(snaps.take_due, Quiet(), 0.0) == 1
    return snaps


@contextlib.contextmanager
def _restarting(tmp_path, msgs):
    """A store holding `msgs` with a snapshot at its end, the derived state then forgotten (a start)."""
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        _append(s, msgs)
        _snapshot(s)
        VISIBLE.reset()
        yield s
    finally:
        s.close()
        VISIBLE.reset()


FIRST = [_data(7), _data(8), _data(None), _marker(7, False), _data(9), _marker(8, True)]  # offsets 0..5
AFTER = [_data(7), _data(None), _marker(9, False), _data(10)]  # 6..9


def test_a_start_restores_the_snapshot_and_replays_only_the_entries_after_it(tmp_path):
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        _append(s, FIRST)
        _snapshot(s)
        _append(s, AFTER)
        derived = _state()
        assert derived["open"] == [[7, 6], [10, 9]] and derived["aborted"] == [[7, 0, 3], [9, 4, 8]]
        VISIBLE.reset()
        assert replay(s, Snapshots(s)) == (1, len(AFTER))  # the snapshot at 6, then 6..9 only
        assert _state() == derived
        VISIBLE.reset()
        assert replay(s) == (1, len(FIRST) + len(AFTER))  # no snapshots: the whole log, the same state
        assert _state() == derived
    finally:
        s.close()
        VISIBLE.reset()


def test_a_torn_or_foreign_snapshot_is_ignored(tmp_path):
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        _append(s, FIRST)
        snaps = _snapshot(s)
        derived = _state()
        path = snaps.path("t", 0)
        good = open(path, "rb").read()
        flipped = good.replace(b'"open":[[9,4]]', b'"open":[[9,5]]')
        assert flipped != good
        other = good.replace(b"snapshot %d " % txn_snapshots.FORMAT, b"snapshot %d " % (txn_snapshots.FORMAT + 1), 1)
        assert other != good
        for bad in [good[:-3], flipped, other, b"", b"\x00" * 40]:
            with open(path, "wb") as f:
                f.write(bad)
            VISIBLE.reset()
            assert replay(s, Snapshots(s)) == (1, len(FIRST))  # the whole log again
            assert _state() == derived
        os.unlink(path)
        with open(path + ".tmp", "wb") as f:  # a kill -9 while it was written: only the temporary file
            f.write(good[: len(good) // 2])
        VISIBLE.reset()
        assert replay(s, Snapshots(s)) == (1, len(FIRST)) and _state() == derived
    finally:
        s.close()
        VISIBLE.reset()


def test_a_snapshot_past_a_cut_is_never_trusted(tmp_path):
    """A follower cut its log below the snapshot and fetched other entries past it: the snapshot (taken
    at 6) names the old entry at 5; a crash before the cut deleted it must not let it in."""
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        _append(s, FIRST)
        snaps = _snapshot(s)
        saved = open(snaps.path("t", 0), "rb").read()
        Derived(VISIBLE, snaps).truncate("t", 0, 4)  # the hook deletes the snapshot at once...
        assert not os.path.exists(snaps.path("t", 0))
        s.truncate_queue("t", 0, 4)
        _append(s, [_marker(8, False), _data(None), _data(None)])  # the new leader aborted 8: 4..6
        derived = _state()
        assert derived["aborted"] == [[7, 0, 3], [8, 1, 4]] and derived["open"] == []
        with open(snaps.path("t", 0), "wb") as f:  # ...and had it survived, it is refused all the same
            f.write(saved)
        VISIBLE.reset()
        assert replay(s, Snapshots(s)) == (1, 7)
        assert _state() == derived
        s.truncate_queue("t", 0, 3)  # cut below and not grown back: taken outside the log
        VISIBLE.reset()
        assert Snapshots(s).load("t", 0) is None
        for name in ["t.1.snap", "t.x.0.snap"]:  # a deleted topic's snapshots go, not another's
            open(os.path.join(snaps.dir, name), "wb").close()
        snaps.drop_topic("t")
        assert sorted(os.listdir(snaps.dir)) == ["t.x.0.snap"]
    finally:
        s.close()
        VISIBLE.reset()


def test_snapshots_are_taken_when_due_and_not_while_an_append_is_half_applied(tmp_path, monkeypatch):
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    monkeypatch.setattr(txn_snapshots, "EVERY_ENTRIES", 4)
    try:
        _append(s, FIRST)
        snaps = Snapshots(s)

        class Busy:
            offloaded = 1
        assert trio.run(snaps.take_due, Busy(), 0.0) == 0  # an append on the worker thread: not now
        assert trio.run(snaps.take_due, Quiet(), 0.0) == 1
        assert trio.run(snaps.take_due, Quiet(), 1.0) == 0  # nothing new
        _append(s, AFTER[:2])
        assert trio.run(snaps.take_due, Quiet(), 2.0) == 0  # 2 offsets: not yet
        assert trio.run(snaps.take_due, Quiet(), 2.0 + txn_snapshots.MAX_AGE_S) == 1  # old enough
        _append(s, AFTER[2:])
        assert trio.run(snaps.take_due, Quiet(), 3.0 + txn_snapshots.MAX_AGE_S) == 0
        _append(s, [_data(None), _data(None)])
        assert trio.run(snaps.take_due, Quiet(), 4.0 + txn_snapshots.MAX_AGE_S) == 1  # 4 offsets on
        assert snaps.taken[("t", 0)][0] == 12
    finally:
        s.close()
        VISIBLE.reset()


def test_a_log_start_past_a_transactions_first_offset_survives_a_restart(tmp_path):
    """tests/replication/test_txn_replay.py's log start past two transactions' first records, after a
    restart: the snapshot (taken before the cut, at 7) is past the log start and holds the true first
    offsets, so the LSO and the aborted index are Kafka's still (a whole replay from the log start 4
    would start 8's transaction at 6 and know no first offset of 7's)."""
    from interop.txn_visibility import queue_stable_end
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        _append(s, [_data(7), _data(None), _data(7), _data(8), _marker(7, False), _data(None), _data(8)])
        _snapshot(s)
        s.delete_records("t", 0, 4)
        VISIBLE.reset()
        assert replay(s, Snapshots(s)) == (1, 0)
        assert queue_stable_end(s, "t", 0) == 4 and VISIBLE.aborted_in("t", 0, 4, 7) == [(7, 0)]
        assert VISIBLE.is_aborted("t", 0, 7, 2) and not VISIBLE.is_aborted("t", 0, 8, 6)
    finally:
        s.close()
        VISIBLE.reset()


def test_marks_of_record_less_ends_are_bounded():
    """`txn_layout._MARKED` (one entry per producer a record-less end marked here) forgets a producer
    once a transaction of it is open on the queue, or after MARK_KEPT_S; a retried end is refused
    meanwhile, and a stale one still after a newer transaction opened (`_open_in`)."""
    from gateway.cluster import txn_layout
    VISIBLE.reset()
    txn_layout._MARKED.clear()
    try:
        txn_layout._MARKED[("t", 0)] = {7: (3, 100.0), 8: (1, 100.0), 9: (2, 900.0)}
        assert not txn_layout._marker_due(None, "t", 0, 7, 3, None)  # a retried end of epoch 3 (unnumbered)
        assert txn_layout._marker_due(None, "t", 0, 7, 4, None)  # the next (transactions v2) transaction's end
        VISIBLE.opened("t", 0, 8, 5)  # 8's next transaction has records here
        assert txn_layout.forget_old_marks(200.0) == 1  # 8's mark went; 7 and 9 are recent
        assert txn_layout._MARKED == {("t", 0): {7: (3, 100.0), 9: (2, 900.0)}}
        assert txn_layout.forget_old_marks(100.0 + txn_layout.MARK_KEPT_S + 1) == 1  # 7's is old
        assert txn_layout.forget_old_marks(900.0 + txn_layout.MARK_KEPT_S + 1) == 1 and not txn_layout._MARKED
    finally:
        txn_layout._MARKED.clear()
        VISIBLE.reset()


def test_install_restores_and_a_deleted_topic_takes_its_state_and_snapshots(tmp_path):
    """`txn_layout.install` (a member's start) restores from the snapshot; deleting the topic then
    forgets its open transactions and deletes its snapshots, so a topic created again under the name
    holds no last stable offset of the old one (a cluster kept it before)."""
    from types import SimpleNamespace

    from gateway.cluster.txn_layout import install
    with _restarting(tmp_path, FIRST) as s:
        app = SimpleNamespace(store=s, replication=SimpleNamespace(derive=None),
                              config=SimpleNamespace(cluster_txn_snapshot_s=60.0))
        snaps = install(app)
        assert snaps.taken[("t", 0)][0] == 6 and isinstance(app.replication.derive, Derived)
        assert VISIBLE.stable_end("t", 0, 6) == 4
        s.topics.delete("t")
        assert VISIBLE.stable_end("t", 0, 6) == 6 and not os.path.exists(snaps.path("t", 0))


NUMBERED = [_data(7), _marker(7, True, 3), _data(7), _marker(7, False, 4), _data(7)]  # ends 3, 4; 4..: open


def test_a_restart_from_a_snapshot_still_refuses_a_stale_marker(tmp_path, monkeypatch):
    """The marker numbers (txn_fence) are in the snapshot: restored, a copy of end 4 (or an older end's)
    does not end the transaction open at 4; a cut across end 4's marker leaves end 3's number."""
    with _restarting(tmp_path, NUMBERED) as s:
        assert replay(s, Snapshots(s)) == (1, 0)  # all from the snapshot, no entry replayed
        assert VISIBLE.last_mark("t", 0, 7) == 4
        assert not _marker_due(s, "t", 0, 7, 0, 4) and not _marker_due(s, "t", 0, 7, 0, 3)
        assert _marker_due(s, "t", 0, 7, 0, 5)  # the open transaction's own end
        VISIBLE.truncate("t", 0, 3)  # a follower's cut of end 4's marker
        assert VISIBLE.last_mark("t", 0, 7) == 3
        assert not _marker_due(s, "t", 0, 7, 0, 3) and _marker_due(s, "t", 0, 7, 0, 4)
        monkeypatch.setattr(txn_snapshots, "FORMAT", 1)  # a snapshot of the format before the numbers...
        _snapshot(s)
        monkeypatch.undo()
        VISIBLE.reset()
        assert replay(s, Snapshots(s)) == (1, len(NUMBERED))  # ...is ignored: the whole log replayed
        assert VISIBLE.last_mark("t", 0, 7) == 4
