"""Crash safety and recovery with real files and real processes: kill -9, torn tail, flipped byte,
rollover across files, retention, deleted derived data."""
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import zlib

import pytest

import store
from store import Message, StoreConfig
from codec.remoting import message as M

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crash_child import CONFIG as CRASH_CONFIG  # noqa: E402


def small(**kw):
    base = dict(commitlog_file_size=32 * 1024, cq_units_per_file=16, index_slots=32, index_entries=128)
    base.update(kw)
    return StoreConfig(**base)


def scan_commitlog(s):
    """Every valid entry of the CommitLog, in order, checked independently of the store's recovery."""
    out = []
    cl = s.commitlog
    pos = cl.begin
    fs = cl.file_size
    while pos < cl.end:
        head = cl.read(pos, 8)
        size = int.from_bytes(head[:4], "big", signed=True)
        if head[4:8] == M.BLANK.pack(0, M.BLANK_MAGIC)[4:]:
            assert size == fs - pos % fs
            pos += size
            continue
        m = M.decode(cl.read(pos, size))
        assert m.physical_offset == pos and M.body_crc(m.body) == m.body_crc
        out.append(m)
        pos += size
    assert pos == cl.end
    return out


def check_consistent(s):
    """ConsumeQueues agree with the CommitLog: every entry has exactly its units, no duplicates."""
    entries = scan_commitlog(s)
    expected = {}
    for m in entries:
        for i in range(m.batch_count):
            key = (m.topic, m.queue_id, m.queue_offset + i)
            assert key not in expected, f"duplicate {key}"
            expected[key] = m.physical_offset
    queues = {(t, q) for t, q, _ in expected}
    for t, q in queues:
        lo, hi = s.min_offset(t, q), s.max_offset(t, q)
        units = s.units(t, q, lo, hi - lo)
        assert len(units) == hi - lo
        for off, (phys, size, _) in zip(range(lo, hi), units):
            assert expected.get((t, q, off)) == phys, (t, q, off)
        assert sum(1 for k in expected if k[:2] == (t, q) and lo <= k[2] < hi) == hi - lo
    return entries


def test_kill9_crash_many_times(tmp_path):
    path = str(tmp_path / "s")
    acked = {}
    rounds = 0
    rnd = random.Random(1234)
    env = dict(os.environ, PYTHONPATH=ROOT)
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline and rounds < 40:
        rounds += 1
        child = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests/store/crash_child.py"), path,
                                  str(rounds)], stdout=subprocess.PIPE, env=env, cwd=ROOT)
        assert child.stdout.readline() == b"ready\n"
        time.sleep(rnd.uniform(0.0, 0.4))
        child.send_signal(signal.SIGKILL)
        lines = child.stdout.read().decode().splitlines()
        child.wait()
        for line in lines[:-1] if lines and not lines[-1] else lines:
            parts = line.split()
            if len(parts) != 6:
                continue  # a line cut by the kill
            qid, qoff, count, phys, crc, n = map(int, parts)
            key = (qid, qoff)
            assert key not in acked or acked[key][0] == phys, f"offset {key} acknowledged twice"
            acked[key] = (phys, count, crc, n)
        s = store.open(path, CRASH_CONFIG)
        try:
            for (qid, qoff), (phys, count, crc, n) in acked.items():
                m = s.get(phys)
                assert m is not None, f"acked entry at {phys} lost"
                assert (m.queue_id, m.queue_offset, m.batch_count) == (qid, qoff, count)
                assert zlib.crc32(m.body) == crc and len(m.body) == n
                assert s.units("crash", qid, qoff, count) == [(phys, m.size, 0)] * count
            check_consistent(s)
        finally:
            s.close()
    assert rounds >= 10 and len(acked) > 100


def _fill(s, n, topic="T", qids=(0, 1), size=700):
    return [s.append(Message(topic, qids[i % len(qids)], bytes([i % 256]) * size, {"KEYS": f"key{i}"}))
            for i in range(n)]


def _abandon(s):
    """Leave the store as a crash would: nothing flushed or checkpointed after this point."""
    s._closed = True


def test_torn_tail(tmp_path, caplog):
    s = store.open(str(tmp_path), small())
    results = _fill(s, 40)
    s.close()
    last = results[-1]
    cl_dir = tmp_path / "commitlog"
    name = cl_dir / f"{s.commitlog.file_start(last.physical_offset):020d}"
    os.truncate(name, last.physical_offset % s.commitlog.file_size + last.size // 2)
    with caplog.at_level(logging.WARNING, logger="rocketgate.store"):
        s = store.open(str(tmp_path), small())
    assert "cut the CommitLog at offset %d" % last.physical_offset in caplog.text
    assert s.max_physical_offset == last.physical_offset
    assert s.max_offset("T", 1) == 19 and s.max_offset("T", 0) == 20
    check_consistent(s)
    r = s.append(Message("T", 1, b"after"))
    assert r.queue_offset == 19 and s.read("T", 1, 19).entries[0][1].body == b"after"
    s.close()
    s = store.open(str(tmp_path), small())
    assert s.max_offset("T", 1) == 20
    check_consistent(s)
    s.close()


def test_flipped_byte_after_checkpoint(tmp_path, caplog):
    s = store.open(str(tmp_path), small())
    _fill(s, 30)
    s.close()  # checkpoint covers these 30
    s = store.open(str(tmp_path), small())
    later = _fill(s, 30)
    _abandon(s)  # crash: written to the page cache, never checkpointed
    bad = later[12]
    with open(tmp_path / "commitlog" / f"{s.commitlog.file_start(bad.physical_offset):020d}", "r+b") as f:
        f.seek(bad.physical_offset % s.commitlog.file_size + 100)  # inside the body
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x40]))
    with caplog.at_level(logging.WARNING, logger="rocketgate.store"):
        s = store.open(str(tmp_path), small())
    assert f"cut the CommitLog at offset {bad.physical_offset} (body CRC mismatch)" in caplog.text
    entries = check_consistent(s)
    assert len(entries) == 42 and s.max_offset("T", 0) + s.max_offset("T", 1) == 42
    assert s.append(Message("T", 0, b"new")).queue_offset == s.max_offset("T", 0) - 1
    s.close()


def test_flipped_byte_full_validation(tmp_path, caplog):
    """Without checkpoints (derived data deleted) recovery validates the whole CommitLog."""
    s = store.open(str(tmp_path), small())
    results = _fill(s, 60)
    s.close()
    bad = results[25]
    with open(tmp_path / "commitlog" / f"{s.commitlog.file_start(bad.physical_offset):020d}", "r+b") as f:
        f.seek(bad.physical_offset % s.commitlog.file_size + 4)  # the magic code
        f.write(b"\x00")
    shutil.rmtree(tmp_path / "consumequeue")
    shutil.rmtree(tmp_path / "index")
    with caplog.at_level(logging.WARNING, logger="rocketgate.store"):
        s = store.open(str(tmp_path), small())
    assert f"cut the CommitLog at offset {bad.physical_offset} (bad magic code" in caplog.text
    assert len(check_consistent(s)) == 25
    assert [m.body for m in s.query_by_key("T", "key24")] == [bytes([24]) * 700]
    assert s.query_by_key("T", "key25") == []
    s.close()


def test_derived_data_rebuilt(tmp_path):
    s = store.open(str(tmp_path), small())
    results = _fill(s, 100)
    s.append(Message("T", 0, b"b", {"TAGS": "x"}, batch_count=4, tags_codes=[1, 2, 3, 4], keys=["bk1", "bk2"]))
    before = {q: s.units("T", q, 0, 1000) for q in (0, 1)}
    s.close()
    shutil.rmtree(tmp_path / "consumequeue")
    shutil.rmtree(tmp_path / "index")
    s = store.open(str(tmp_path), small())
    assert {q: s.units("T", q, 0, 1000) for q in (0, 1)} == before
    assert [u[2] for u in before[0][-4:]] == [1, 2, 3, 4]
    assert s.query_by_key("T", "key77")[0].physical_offset == results[77].physical_offset
    assert s.query_by_key("T", "bk2")[0].batch_count == 4
    check_consistent(s)
    s.close()


def test_empty_index_file_from_a_crash_is_rebuilt(tmp_path, caplog):
    """kill -9 between creating an IndexFile and sizing it leaves an empty file; opening must
    rebuild the index from the CommitLog instead of failing."""
    s = store.open(str(tmp_path), small())
    results = _fill(s, 50)
    s.close()
    names = sorted(n for n in os.listdir(tmp_path / "index") if n.isdigit())
    open(tmp_path / "index" / f"{int(names[-1]) + 1:017d}", "wb").close()
    with caplog.at_level(logging.WARNING, logger="rocketgate.store"):
        s = store.open(str(tmp_path), small())
    assert "torn index file" in caplog.text
    assert s.query_by_key("T", "key7")[0].physical_offset == results[7].physical_offset
    s.append(Message("T", 0, b"after", {"KEYS": "later"}))
    assert s.query_by_key("T", "later")[0].body == b"after"
    s.close()


def test_rollover_files(tmp_path):
    cfg = small()
    s = store.open(str(tmp_path), cfg)
    results = _fill(s, 200, size=3000)
    assert len(s.commitlog.starts) >= 15
    names = sorted(os.listdir(tmp_path / "commitlog"))
    assert all(len(n) == 20 and int(n) % cfg.commitlog_file_size == 0 for n in names)
    assert all(os.path.getsize(tmp_path / "commitlog" / n) == cfg.commitlog_file_size for n in names[:-1])
    s.close()
    cq_files = sorted(os.listdir(tmp_path / "consumequeue" / "T" / "0"))
    s = store.open(str(tmp_path), cfg)
    assert len(cq_files) == 7 and cq_files[1] == f"{16 * 20:020d}"
    check_consistent(s)
    assert [m.body for _, m in s.read("T", 0, 0, max_count=1000).entries] == [bytes([i % 256]) * 3000 for i in range(0, 200, 2)]
    s.close()


def test_retention(tmp_path):
    cfg = small(file_reserved_hours=1)
    s = store.open(str(tmp_path), cfg)
    results = _fill(s, 200, size=2000)
    starts = list(s.commitlog.starts)
    old = time.time() - 7200
    for st in starts[:5]:
        os.utime(tmp_path / "commitlog" / f"{st:020d}", (old, old))
    assert s.delete_expired() == 5
    assert s.commitlog.begin == starts[5]
    first_kept = next(r for r in results if r.physical_offset >= starts[5])
    for q in (0, 1):
        assert s.max_offset("T", q) == 100
        lo = s.min_offset("T", q)
        m = s.read("T", q, lo).entries[0][1]
        mine = results[q::2]
        assert m.physical_offset == mine[lo].physical_offset >= starts[5] > mine[lo - 1].physical_offset
    assert s.read("T", 0, 0).next_offset == s.min_offset("T", 0)
    mins = (s.min_offset("T", 0), s.min_offset("T", 1))
    assert min(mins) > 0 and s.get(first_kept.physical_offset) is not None
    assert s.offset_for_timestamp("T", 0, 0) == mins[0]
    s.close()
    s = store.open(str(tmp_path), cfg)
    assert (s.min_offset("T", 0), s.min_offset("T", 1)) == mins
    assert (s.max_offset("T", 0), s.max_offset("T", 1)) == (100, 100)
    check_consistent(s)
    s.close()
    shutil.rmtree(tmp_path / "consumequeue")
    s = store.open(str(tmp_path), cfg)
    assert (s.min_offset("T", 0), s.min_offset("T", 1)) == mins
    assert (s.max_offset("T", 0), s.max_offset("T", 1)) == (100, 100)
    assert s.append(Message("T", 0, b"x")).queue_offset == 100
    # everything expires but the file being written: the max offset never moves back
    for st in s.commitlog.starts:
        os.utime(tmp_path / "commitlog" / f"{st:020d}", (old, old))
    s.delete_expired()
    assert s.max_offset("T", 0) == 101 and s.max_offset("T", 1) == 100
    s.close()
    s = store.open(str(tmp_path), cfg)
    assert s.max_offset("T", 0) == 101 and s.max_offset("T", 1) == 100
    s.close()


def test_bad_input_rejected(tmp_path):
    s = store.open(str(tmp_path), small(max_message_size=1000))
    with pytest.raises(store.MessageTooLarge):
        s.append(Message("T", 0, b"x" * 1001))
    with pytest.raises(store.StoreError):
        s.append(Message("T" * 200, 0, b"x"))
    with pytest.raises(store.StoreError):
        s.append_many([Message("T", 0, b"ok"), Message("T", 0, b"x", batch_count=2, tags_codes=[1])])
    for bad in (Message("T", 0, b"x", flag=1 << 40), Message("T", -1, b"x"), Message("T", 0, "not bytes"),
                Message("T", 0, b"x", born_host=None)):
        with pytest.raises(store.StoreError):
            s.append(bad)
    assert s.max_offset("T", 0) == 0 and s.max_physical_offset == 0
    assert s.append(Message("T", 0, b"fine", born_host=("::1", 5))).queue_offset == 0
    assert s.get(0).born_host == ("0.0.0.0", 5)
    s.append(Message("T", 0, b"fine", born_host=("::ffff:10.0.0.7", 6)))
    assert s.read("T", 0, 1).entries[0][1].born_host == ("10.0.0.7", 6)
    s.close()


def test_flush_thread_while_appending(tmp_path):
    """flush() on another thread (as the gateway runs it) while this thread appends and reads."""
    import threading

    s = store.open(str(tmp_path), small(commitlog_file_size=16 * 1024))
    stop = threading.Event()
    errors = []

    def flusher():
        try:
            while not stop.is_set():
                s.flush()
                s._last_derived_flush = 0  # checkpoint on every flush: the worst case for races
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    th = threading.Thread(target=flusher)
    th.start()
    try:
        results = []
        for i in range(1500):
            results.extend(s.append_many([Message("T", i % 3, os.urandom(i % 500), {"KEYS": f"k{i}"})] * (1 + i % 3)))
            if i % 50 == 0:
                r = s.read("T", i % 3, max(0, s.max_offset("T", i % 3) - 5))
                assert r.entries
    finally:
        stop.set()
        th.join()
    assert not errors
    s.flush()
    flushed = s.flushed_offset
    assert flushed == s.max_physical_offset
    _abandon(s)  # crash right after
    s = store.open(str(tmp_path), small(commitlog_file_size=16 * 1024))
    entries = check_consistent(s)
    assert len(entries) == len(results)
    assert all(s.get(r.physical_offset) is not None for r in results)
    s.close()


def test_an_idle_store_does_not_rewrite_its_checkpoints(tmp_path):
    """Each flush interval writes the checkpoints (two files created, fsynced, renamed) only when
    something was appended since: an idle store, as most shards of --shards N are, does no I/O."""
    s = store.open(str(tmp_path), small())
    checkpoints = [tmp_path / "consumequeue" / ".checkpoint", tmp_path / "index" / ".checkpoint"]

    def flush_now():
        s._flusher._last_derived = 0  # the interval has passed
        s.flush()
        return [os.stat(p).st_ino for p in checkpoints]

    _fill(s, 3)
    written = flush_now()
    assert flush_now() == written  # nothing appended: not written again
    _fill(s, 1)
    again = flush_now()
    assert all(a != b for a, b in zip(again, written))  # appended: new checkpoint files
    assert [int(p.read_bytes()) for p in checkpoints] == [s.max_physical_offset] * 2
    s.close()
