"""A cluster replica's Kafka transaction state after a restart (docs/cluster-txn-layout.md, "Restart"):
replayed from each replicated queue's log, it is what the appends derived, also on a follower whose
copy was cut back (its truncation undone) and on a queue a restart found half-way through a transaction."""
from __future__ import annotations

import store
from codec.kafka import records
from gateway.cluster.txn_layout import replay
from interop.inner_batch import NOT_INDEXED, entry_message, index_info
from interop.txn_visibility import VISIBLE


def _open(path) -> store.Store:
    return store.open(str(path), store.StoreConfig(commitlog_file_size=1 << 20, index_slots=1000,
                                                   index_entries=4000))


def _data(pid: int | None, n: int = 2):
    b = records.parse_batches(records.build_batch(
        [(0, b"k", b"v%d" % i, []) for i in range(n)], producer_id=-1 if pid is None else pid,
        producer_epoch=0 if pid is not None else -1, base_sequence=0 if pid is not None else -1,
        transactional=pid is not None))[0]
    return entry_message("t", 0, b, index_info(b), {}, 1000, False)


def _marker(pid: int, commit: bool):
    b = records.parse_batches(records.control_batch(commit, pid, 0, 1000))[0]
    return entry_message("t", 0, b, NOT_INDEXED, {}, 1000, False)


def _state():
    return dict(VISIBLE.open.get(("t", 0), {})), VISIBLE.aborted_in("t", 0, 0, 1 << 40)


def test_a_restart_replays_the_log_to_the_state_its_appends_derived(tmp_path):
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        # 0-1 pid 7, 2-3 pid 8, 4 plain (1 offset per record: 4-5), abort of 7 at 6, 7-8 pid 7 again, commit of 8 at 9
        for m in [_data(7), _data(8), _data(None), _marker(7, False), _data(7), _marker(8, True)]:
            r = s.append(m)
            VISIBLE.appended("t", 0, r.queue_offset, m)
        derived = _state()
        assert derived == ({7: 7}, [(7, 0)])
        s.close()
        VISIBLE.reset()
        s = _open(tmp_path / "s")
        assert replay(s)[0] == 1
        assert _state() == derived
        assert VISIBLE.stable_end("t", 0, s.max_offset("t", 0)) == 7
        s.truncate_queue("t", 0, 7)  # a follower's cut: the log now ends after the abort marker
        s.close()
        s = _open(tmp_path / "s")
        replay(s)
        assert _state() == ({8: 2}, [(7, 0)])  # the commit of 8 is gone with the cut: open again
    finally:
        s.close()
        VISIBLE.reset()


def test_an_end_of_an_older_epoch_ends_not_the_producers_next_transaction(tmp_path):
    """A stale end (of the transaction before, transactions v2 bumped the epoch since) reaching the
    leader after the producer's next transaction began appends no marker there (`txn_layout._open_in`)."""
    from gateway.cluster.txn_layout import _open_in
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        b = records.parse_batches(records.build_batch([(0, b"k", b"v", [])], producer_id=7, producer_epoch=3,
                                                      base_sequence=0, transactional=True))[0]
        m = entry_message("t", 0, b, index_info(b), {}, 1000, False)
        VISIBLE.appended("t", 0, s.append(m).queue_offset, m)
        assert not _open_in(s, "t", 0, 7, 2)  # the end of epoch 2's transaction: not this one
        assert _open_in(s, "t", 0, 7, 3) and not _open_in(s, "t", 0, 8, 3)
    finally:
        s.close()
        VISIBLE.reset()


def test_a_log_start_past_a_transactions_first_offset_keeps_kafkas_lso_and_aborted_index(tmp_path):
    """DeleteRecords (or retention) moves the log start past an aborted transaction's first record while
    its marker stays, and past an open one's first record. As Kafka: the aborted index keeps the entry
    with its first offset (Kafka's .txnindex entry lives in the marker's segment and goes with it), and
    the last stable offset is the log start, never below it (Kafka's first unstable offset is
    max(first offset, log start); fetch.py, list_offsets.py, pull and POP read it so)."""
    from interop.txn_visibility import queue_stable_end
    s = _open(tmp_path / "s")
    VISIBLE.reset()
    try:
        # 0 pid 7, 1 plain, 2 pid 7, 3 pid 8 (open), 4 abort of 7, 5 plain, 6 pid 8
        for m in [_data(7, 1), _data(None, 1), _data(7, 1), _data(8, 1), _marker(7, False), _data(None, 1), _data(8, 1)]:
            VISIBLE.appended("t", 0, s.append(m).queue_offset, m)
        assert queue_stable_end(s, "t", 0) == 3
        s.delete_records("t", 0, 4)
        assert queue_stable_end(s, "t", 0) == 4  # the code before: 3, below the log start
        assert VISIBLE.aborted_in("t", 0, 4, 7) == [(7, 0)]
        assert VISIBLE.is_aborted("t", 0, 7, 2) and not VISIBLE.is_aborted("t", 0, 8, 6)
    finally:
        s.close()
        VISIBLE.reset()
