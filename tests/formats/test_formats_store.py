"""Store files: the construct definitions (codec.formats.store) and the hot paths (store.consumequeue,
store.indexfile, store.flush, store.topic_journal, store.config, store.segment_size, store.lock) agree,
both directions."""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codec.formats.store import (Checkpoint, ConfigDocument, ConsumeQueueUnit, DataDirLockFile, IndexEntry, IndexHeader,
                                 IndexSlot, StoreSize, TopicJournalRecord)
from store import indexfile, lock, segment_size
from store.config import ConfigDir
from store.consumequeue import UNIT, UNIT_SIZE
from store.flush import CHECKPOINT, read_checkpoint
from store.topic_journal import decode_records, encode_record
from format_strategies import i32, i64, text

SLOTS, ENTRIES = 7, 16


@settings(deadline=None)
@given(phys=i64, size=i32, code=i64)
def test_consume_queue_unit_both_directions(phys, size, code):
    raw = UNIT.pack(phys, size, code)
    p = ConsumeQueueUnit.parse(raw)
    assert (p.physical_offset, p.size, p.tags_code) == (phys, size, code)
    assert ConsumeQueueUnit.build(dict(physical_offset=phys, size=size, tags_code=code)) == raw
    assert ConsumeQueueUnit.sizeof() == UNIT_SIZE


puts = st.lists(st.tuples(st.text(min_size=1, max_size=12), st.integers(0, 1 << 40), st.integers(0, 10 ** 6)),
                min_size=1, max_size=ENTRIES - 1)


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(puts=puts, base_ts=st.integers(0, 1 << 41))
def test_index_file_written_by_the_hot_path_parses(puts, base_ts):
    with tempfile.TemporaryDirectory() as d:
        f = indexfile.IndexFile(os.path.join(d, "i"), SLOTS, ENTRIES, create=True)
        for key, phys, dt in puts:
            f.put(key, phys, base_ts + dt)
        f.flush()
        f.close()
        raw = open(os.path.join(d, "i"), "rb").read()
    head = IndexHeader.parse(raw)
    assert (head.begin_phys, head.end_phys, head.index_count) == (puts[0][1], puts[-1][1], len(puts) + 1)
    assert (head.begin_timestamp, head.end_timestamp) == (base_ts + puts[0][2], base_ts + puts[-1][2])
    entries_at = IndexHeader.sizeof() + SLOTS * IndexSlot.sizeof()
    newest = {}
    for n, (key, phys, dt) in enumerate(puts, start=1):
        e = IndexEntry.parse(raw[entries_at + n * IndexEntry.sizeof():])
        h = indexfile.key_hash(key)
        diff = max(0, (base_ts + dt - head.begin_timestamp) // 1000)
        assert (e.key_hash, e.physical_offset, e.time_diff) == (h, phys, diff)
        assert e.prev_index == newest.get(h % SLOTS, 0)
        newest[h % SLOTS] = n
    for slot in range(SLOTS):
        assert IndexSlot.parse(raw[IndexHeader.sizeof() + slot * IndexSlot.sizeof():]).newest == newest.get(slot, 0)
    assert used_slots(raw) == len(newest) == head.used_slots


def used_slots(raw) -> int:
    return sum(1 for s in range(SLOTS) if IndexSlot.parse(raw[40 + 4 * s:]).newest)


@settings(deadline=None, max_examples=40)
@given(puts=puts, base_ts=st.integers(0, 1 << 41))
def test_index_file_built_by_the_definition_is_read_by_the_hot_path(puts, base_ts):
    slots, entries = [0] * SLOTS, [IndexEntry.build(dict(key_hash=0, physical_offset=0, time_diff=0, prev_index=0))]
    for n, (key, phys, dt) in enumerate(puts, start=1):
        h = indexfile.key_hash(key)
        entries.append(IndexEntry.build(dict(key_hash=h, physical_offset=phys, time_diff=dt // 1000,
                                             prev_index=slots[h % SLOTS])))
        slots[h % SLOTS] = n
    head = IndexHeader.build(dict(begin_timestamp=base_ts, end_timestamp=base_ts + puts[-1][2],
                                  begin_phys=puts[0][1], end_phys=puts[-1][1],
                                  used_slots=sum(1 for s in slots if s), index_count=len(puts) + 1))
    raw = head + b"".join(IndexSlot.build(dict(newest=s)) for s in slots) + b"".join(entries)
    raw += bytes(40 + 4 * SLOTS + 20 * ENTRIES - len(raw))
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "i"), "wb").write(raw)
        f = indexfile.IndexFile(os.path.join(d, "i"), SLOTS, ENTRIES, create=False)
        try:
            assert (f.begin_ts, f.begin_phys, f.end_phys, f.count) == (base_ts, puts[0][1], puts[-1][1], len(puts) + 1)
            for key, phys, dt in puts:
                found = f.lookup(key, 0, 1 << 62, ENTRIES)
                assert phys in found
        finally:
            f.close()


@settings(deadline=None)
@given(offset=st.integers(-1, 1 << 62))
def test_checkpoint_both_directions(offset):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, CHECKPOINT)
        open(path, "wb").write(b"%d" % offset)  # what Flusher.write_checkpoints writes
        assert Checkpoint.parse(open(path, "rb").read()) == offset
        open(path, "wb").write(Checkpoint.build(offset))
        assert read_checkpoint(d) == offset


records = st.fixed_dictionaries({"v": st.integers(0, 1 << 40), "op": st.just("put"), "name": text,
                                 "topic": st.dictionaries(text, st.integers() | text, max_size=3)})


@settings(deadline=None)
@given(record=records)
def test_topic_journal_record_both_directions(record):
    line = encode_record(record)
    assert line.endswith(b"\n")
    assert TopicJournalRecord.parse(line[:-1]) == record
    built = TopicJournalRecord.build(record) + b"\n"
    assert built == line
    assert decode_records(built) == ([record], len(built))


json_values = st.recursive(st.none() | st.booleans() | st.integers() | text,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                           max_leaves=10)


@settings(deadline=None)
@given(doc=st.dictionaries(text, json_values, max_size=4))
def test_config_document_both_directions(doc):
    with tempfile.TemporaryDirectory() as d:
        cfg = ConfigDir(d)
        cfg.write("doc", doc)
        raw = open(cfg.path("doc"), "rb").read()
        assert ConfigDocument.parse(raw) == doc
        assert ConfigDocument.build(doc) == raw
        cfg.write_bytes("doc", ConfigDocument.build(doc))
        assert cfg.read("doc") == doc


ops = st.fixed_dictionaries({"k": st.sampled_from(["init", "pop", "ack", "drop"]), "g": text, "t": text,
                             "q": st.integers(0, 1000)}, optional={"s": st.integers(0, 1 << 40), "o": st.integers()})


@settings(max_examples=25, deadline=None)
@given(op_list=st.lists(ops, min_size=1, max_size=4))
def test_pop_log_op_both_directions(op_list):
    """What PopLog.append stores parses with PopLogOp, and a PopLogOp-built body replays through
    the pop log's loader (apply_op) as the op itself."""
    import store as store_pkg
    from codec.formats.store import PopLogOp
    from codec.remoting.message import Message
    from semantics.pop_log import LOG_TOPIC, PopLog
    from store.tool.files import CommitLogFiles
    with tempfile.TemporaryDirectory() as d:
        s = store_pkg.open(d)
        log = PopLog(s)
        for op in op_list:
            log.append(op)
        s.append(Message(topic=LOG_TOPIC, queue_id=0, body=PopLogOp.build(op_list[0])))
        s.close()
        bodies = [v.body for _p, kind, v in CommitLogFiles(d).walk() if kind == "entry" and v.topic == LOG_TOPIC]
    assert [PopLogOp.parse(b) for b in bodies] == op_list + [op_list[0]]
    assert bodies[-1] == bodies[0]


@settings(deadline=None, max_examples=30)
@given(size=st.integers(1, 1 << 40))
def test_store_size_both_directions(size):
    """config/store.json as store.segment_size writes it parses with StoreSize, and a StoreSize-built
    file is the size the store reads back."""
    with tempfile.TemporaryDirectory() as d:
        segment_size.check(d, os.path.join(d, "commitlog"), size)
        path = os.path.join(d, "config", segment_size.FILE)
        raw = open(path, "rb").read()
        assert StoreSize.parse(raw) == {"commitlog_file_size": size}
        assert StoreSize.build({"commitlog_file_size": size}) == raw
        open(path, "wb").write(StoreSize.build({"commitlog_file_size": size + 1}))
        assert segment_size.stored(d) == size + 1


holder_names = text.filter(lambda s: s and s == s.strip() and "\n" not in s)


@settings(deadline=None, max_examples=30)
@given(what=holder_names)
def test_data_dir_lock_file_both_directions(what):
    """The lock file store.lock's holder writes parses with DataDirLockFile, and a DataDirLockFile-built
    one is what a refused process names the holder by."""
    with tempfile.TemporaryDirectory() as d:
        held = lock.acquire(d, what=what)
        try:
            raw = open(os.path.join(d, lock.LOCK_FILE), "rb").read()
            p = DataDirLockFile.parse(raw)
            assert (p.pid, p.what) == (os.getpid(), what)
            assert DataDirLockFile.build(dict(pid=os.getpid(), what=what)) == raw
            rewritten = DataDirLockFile.build(dict(pid=os.getpid(), what="x" + what))
            open(os.path.join(d, lock.LOCK_FILE), "wb").write(rewritten)
            with pytest.raises(lock.DataDirLocked) as refused:
                lock.acquire(d)
            assert (refused.value.holder, refused.value.holder_what) == (f"x{what} (PID {os.getpid()})", "x" + what)
        finally:
            held.release()
