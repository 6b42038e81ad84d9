"""The dispatcher pipeline: one list of dispatchers fed by live appends and by recovery's replay."""
import os
import shutil
import threading

import store
from store import DispatchRequest, Message, StoreConfig
from codec.remoting.message import tag_hash
from semantics.views import Views


def small(**kw):
    base = dict(commitlog_file_size=16 * 1024, cq_units_per_file=16, index_slots=32, index_entries=128)
    base.update(kw)
    return StoreConfig(**base)


class Recorder:
    def __init__(self) -> None:
        self.requests: list[DispatchRequest] = []

    def dispatch(self, requests) -> None:
        self.requests.extend(requests)


def comparable(r: DispatchRequest) -> tuple:
    return (r.topic, r.queue_id, r.queue_offset, r.count, r.physical_offset, r.size, r.store_timestamp,
            r.sys_flag, list(r.tags_codes or ()), list(r.keys or ()), dict(r.properties))


def fill(s) -> None:
    """Plain messages, keys, an inner batch, across several CommitLog files (blank padding)."""
    for i in range(60):
        s.append(Message("T", i % 3, b"x" * 700, {"TAGS": "AB"[i % 2], "KEYS": f"k{i}"}))
    s.append(Message("T", 1, b"batch", {}, batch_count=3, tags_codes=[tag_hash("A"), tag_hash("B"), tag_hash("A")],
                     keys=["b1", "b2"], sys_flag=0))
    s.append_many([Message("U", 0, b"y%d" % i, {"TAGS": "A"}) for i in range(5)])


def test_dispatcher_sees_the_same_requests_live_and_in_recovery(tmp_path):
    s = store.open(str(tmp_path), small())
    live = Recorder()
    s.add_dispatcher(live)
    fill(s)
    units = {(t, q): s.units(t, q, 0, 1000) for t, q in [("T", 0), ("T", 1), ("T", 2), ("U", 0)]}
    s.close()
    shutil.rmtree(tmp_path / "consumequeue")  # its checkpoint goes with it: replay from the start
    s = store.open(str(tmp_path), small(), recover=False)
    replayed = Recorder()
    s.add_dispatcher(replayed)
    s.recover()
    assert len(live.requests) == 66
    assert [comparable(r) for r in replayed.requests] == [comparable(r) for r in live.requests]
    assert {k: s.units(*k, 0, 1000) for k in units} == units
    assert [m.body for m in s.query_by_key("T", "b2")] == [b"batch"]
    s.recover()  # once only
    assert len(replayed.requests) == 66
    s.close()


def test_index_and_queues_replay_from_their_own_checkpoints(tmp_path):
    """Only the index directory is lost: the index dispatcher gets the replay from the start, the
    others only what their checkpoint does not cover (here nothing)."""
    s = store.open(str(tmp_path), small())
    fill(s)
    s.close()
    shutil.rmtree(tmp_path / "index")
    s = store.open(str(tmp_path), small(), recover=False)
    others = Recorder()
    s.add_dispatcher(others)
    s.recover()
    assert others.requests == []
    assert [m.body for m in s.query_by_key("T", "k7")] == [b"x" * 700]
    assert s.max_offset("T", 1) == 23
    s.close()


def test_view_rebuilt_by_the_replay(tmp_path):
    s = store.open(str(tmp_path), small())
    s.topics.create("T", 3, 3)
    views = Views(s)
    views.create_view("V", "T", "A")
    fill(s)
    before = {q: s.units("V", q, 0, 1000) for q in range(3)}
    assert [len(u) for u in before.values()] == [10, 12, 10]  # the batch: two of its records match
    s.close()
    shutil.rmtree(tmp_path / "consumequeue")
    s = store.open(str(tmp_path), small(), recover=False)
    Views(s)  # registered before the replay: nothing to catch up from yet (the base queues are empty)
    assert s.max_offset("V", 0) == 0 and s.max_offset("T", 0) == 0
    s.recover()
    assert {q: s.units("V", q, 0, 1000) for q in range(3)} == before
    assert [m.body for _o, m in s.read("V", 1, 0, max_count=100).entries][-1] == b"batch"
    s.close()


def test_failing_dispatcher_does_not_fail_the_append(tmp_path):
    class Broken:
        def dispatch(self, requests):
            raise RuntimeError("bug")

    s = store.open(str(tmp_path), small())
    seen = Recorder()
    s.add_dispatcher(Broken())
    s.add_dispatcher(seen)
    r = s.append(Message("T", 0, b"x"))
    assert r.queue_offset == 0 and len(seen.requests) == 1 and s.max_offset("T", 0) == 1
    s.close()


def test_retention_does_not_wait_for_a_running_flush(tmp_path):
    """Files are unlinked at once; their descriptors are closed when the flush (here: a held
    sync lock, standing for a long fsync) is done."""
    s = store.open(str(tmp_path), small(file_reserved_hours=0))
    for i in range(40):
        s.append(Message("T", 0, b"z" * 1000))
    files_before = len(os.listdir(tmp_path / "commitlog"))
    result = []
    with s._flusher.sync_lock:
        worker = threading.Thread(target=lambda: result.append(s.delete_expired(now_ms=1 << 50)))
        worker.start()
        worker.join(30)
        assert not worker.is_alive() and result[0] > 0
        assert len(os.listdir(tmp_path / "commitlog")) == files_before - result[0]
        assert len(s._flusher._retired) >= result[0]  # still open: the running flush may use them
    s.flush()  # closes them
    assert s._flusher._retired == []
    assert s.min_offset("T", 0) > 0 and s.read("T", 0, s.min_offset("T", 0)).entries
    s.close()


def test_topic_deletion_completes_while_the_flush_lock_is_held(tmp_path):
    """Deleting a topic does not wait for a running fsync: its queues are detached and removed at
    once, and closed by the flusher after it."""
    s = store.open(str(tmp_path), store.StoreConfig(commitlog_file_size=64 << 10))
    s.topics.create("T", 2, 2)
    s.topics.create("U", 1, 1)
    for i in range(50):
        s.append(Message("T", i % 2, b"t" * 100))
        s.append(Message("U", 0, b"u" * 100))
    done = []
    with s._flusher.sync_lock:
        worker = threading.Thread(target=lambda: done.append(s.topics.delete("T")))
        worker.start()
        worker.join(30)
        assert not worker.is_alive() and done
        assert s.queues("T") == [] and not (tmp_path / "consumequeue" / "T").exists()
        assert len(s._flusher._retired) == 2  # still open: the running flush may be syncing them
    s.flush()
    assert s._flusher._retired == []
    assert [m.body for _, m in s.iterate("U", 0)] == [b"u" * 100] * 50
    s.close()


def test_facade_satisfies_the_documented_api(tmp_path):
    """store.MessageStore is the Store API table of docs/internals.md, and the facade has all of it."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "internals.md").read_text()
    table = doc.split("### Store API", 1)[1].split("\nNotes:", 1)[0]
    documented = set(re.findall(r"`s\.(\w+)", table))
    protocol = {n for n in vars(store.MessageStore) if not n.startswith("_")} | set(
        store.MessageStore.__annotations__)
    assert documented == protocol
    s = store.open(str(tmp_path), small())
    assert isinstance(s, store.MessageStore)
    assert all(hasattr(s, name) for name in protocol)
    s.close()


def test_deleting_one_view_leaves_the_others_current(tmp_path):
    s = store.open(str(tmp_path), small())
    s.topics.create("T", 1, 1)
    views = Views(s)
    views.create_view("V1", "T", "A")
    views.create_view("V2", "T", "A")
    s.append(Message("T", 0, b"1", {"TAGS": "A"}))
    s.topics.delete("V1")
    s.append(Message("T", 0, b"2", {"TAGS": "A"}))
    assert [m.body for _o, m in s.read("V2", 0, 0).entries] == [b"1", b"2"]
    assert s.max_offset("V2", 0) == 2 and views.views_of("T") == ["V2"]
    s.close()
