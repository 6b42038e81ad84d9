"""The store calls of replication (store/replica.py) and the leader-epoch table, in process."""
from __future__ import annotations

import pytest

import store
from codec.kafka import records
from interop.inner_batch import entry_message, index_info
from semantics.replication.epochs import UNDEFINED, LeaderEpochCache
from store.replica import ReplicaGap


def _open(path) -> store.Store:
    return store.open(str(path), store.StoreConfig(commitlog_file_size=1 << 20, index_slots=1000,
                                                   index_entries=4000))


def _fill(s: store.Store, topic: str = "t") -> None:
    s.append(store.Message(topic=topic, queue_id=0, body=b"one", properties={"TAGS": "a", "KEYS": "k1"}))
    b = records.parse_batches(records.build_batch([(5, b"k", b"v%d" % i, []) for i in range(3)]))[0]
    s.append(entry_message(topic, 0, b, index_info(b), {}, 1000, False))
    s.append(store.Message(topic=topic, queue_id=0, body=b"three", flag=7, reconsume_times=2))


def test_replicated_entries_land_at_the_leaders_offsets_with_the_leaders_content(tmp_path):
    leader, follower = _open(tmp_path / "l"), _open(tmp_path / "f")
    _fill(leader)
    follower.append(store.Message(topic="other", queue_id=0, body=b"x"))  # CommitLog offsets differ
    entries = [m for _, m in leader.iterate("t", 0)]
    follower.append_replicated("t", 0, 0, entries)
    assert follower.max_offset("t", 0) == leader.max_offset("t", 0) == 5
    copied = list(follower.iterate("t", 0))
    assert [q for q, _ in copied] == [0, 1, 4]
    for (q, mine), theirs in zip(copied, entries):
        assert (mine.body, mine.properties, mine.flag, mine.sys_flag, mine.batch_count, mine.reconsume_times,
                mine.born_timestamp) == (theirs.body, theirs.properties, theirs.flag, theirs.sys_flag,
                                         theirs.batch_count, theirs.reconsume_times, theirs.born_timestamp)
        assert mine.physical_offset != theirs.physical_offset
    assert [m.body for m in follower.query_by_key("t", "k1")] == [b"one"]
    leader.close()
    follower.close()


def test_replicated_entries_must_continue_the_queue(tmp_path):
    leader, follower = _open(tmp_path / "l"), _open(tmp_path / "f")
    _fill(leader)
    entries = [m for _, m in leader.iterate("t", 0)]
    with pytest.raises(ReplicaGap):
        follower.append_replicated("t", 0, 1, entries[1:])  # the queue ends at 0
    with pytest.raises(ReplicaGap):
        follower.append_replicated("t", 0, 0, [entries[0], entries[2]])  # a gap inside
    with pytest.raises(ReplicaGap):
        follower.append_replicated("u", 0, 0, entries[:1])  # another queue's entry
    assert follower.max_offset("t", 0) == 0 and follower.max_physical_offset == 0  # nothing written
    leader.close()
    follower.close()


def test_truncation_survives_a_restart_and_the_queue_continues(tmp_path):
    s = _open(tmp_path / "s")
    _fill(s)
    assert s.truncate_queue("t", 0, 1) == 1
    assert s.truncate_queue("t", 0, 3) == 1  # past the end: nothing to cut
    assert s.append(store.Message(topic="t", queue_id=0, body=b"after")).queue_offset == 1
    s.close()
    s = _open(tmp_path / "s")
    assert [(q, m.body) for q, m in s.iterate("t", 0)] == [(0, b"one"), (1, b"after")]
    s.close()


def test_a_crash_after_truncation_does_not_bring_the_cut_entries_back(tmp_path):
    s = _open(tmp_path / "s")
    _fill(s)
    s.truncate_queue("t", 0, 1)
    s.append(store.Message(topic="t", queue_id=0, body=b"after"))
    s.commitlog.sync()  # no checkpoint after this append: the reopen replays it (a crash)
    s2 = _open(tmp_path / "s")
    assert [(q, m.body) for q, m in s2.iterate("t", 0)] == [(0, b"one"), (1, b"after")]
    s2.close()


def test_epoch_table_answers_where_an_epoch_ended(tmp_path):
    s = _open(tmp_path / "s")
    cache = LeaderEpochCache(s)
    cache.assign("t", 0, 1, 0)
    cache.assign("t", 0, 3, 10)
    cache.assign("t", 0, 2, 12)  # older than the latest: ignored
    assert cache.end_offset("t", 0, 1, 20) == (1, 10)
    assert cache.end_offset("t", 0, 2, 20) == (1, 10)  # epoch 2 never led: the largest <= 2 is 1
    assert cache.end_offset("t", 0, 3, 20) == (3, 20)
    assert cache.end_offset("t", 0, 0, 20) == (UNDEFINED, UNDEFINED)
    cache.assign("t", 0, 4, 10)  # epoch 3 wrote nothing that survives
    assert cache.entries("t", 0) == [(1, 0), (4, 10)]
    cache.truncate_from_end("t", 0, 5)
    assert cache.entries("t", 0) == [(1, 0)]
    assert LeaderEpochCache(s).entries("t", 0) == [(1, 0)]  # persisted
    s.close()
