"""Smoke test of the store API the protocol layers use (docs/internals.md)."""
import store
from store import Message, StoreConfig
from semantics.offsets import OffsetTable


class Recorder:
    """A dispatcher that records (topic, queue id, next offset) of every request it sees."""

    def __init__(self, seen: list) -> None:
        self.seen = seen

    def dispatch(self, requests) -> None:
        self.seen.extend((r.topic, r.queue_id, r.queue_offset + r.count) for r in requests)


def small_config(**kw):
    base = dict(commitlog_file_size=64 * 1024, cq_units_per_file=100, index_slots=64, index_entries=256)
    base.update(kw)
    return StoreConfig(**base)


def test_append_read_reopen(tmp_path):
    s = store.open(str(tmp_path), small_config())
    seen = []
    s.add_dispatcher(Recorder(seen))
    r0 = s.append(Message("T", 0, b"hello", {"TAGS": "A", "KEYS": "k1 k2"}))
    r1 = s.append(Message("T", 0, b"world", {"TAGS": "B", "UNIQ_KEY": "U1"}))
    rb = s.append(Message("T", 1, b"batch-body", {}, batch_count=3, tags_codes=[5, 5, 5], keys=["x", "y"]))
    assert (r0.queue_offset, r1.queue_offset, rb.queue_offset) == (0, 1, 0)
    assert r1.physical_offset == r0.end_offset
    assert seen == [("T", 0, 1), ("T", 0, 2), ("T", 1, 3)]
    assert s.max_offset("T", 0) == 2 and s.max_offset("T", 1) == 3 and s.max_offset("X", 0) == 0
    res = s.read("T", 0, 0)
    assert [(q, m.body, m.properties["TAGS"]) for q, m in res.entries] == [(0, b"hello", "A"), (1, b"world", "B")]
    assert res.next_offset == 2
    m = res.entries[0][1]
    assert m.raw == s.read_entry(r0.physical_offset, r0.size)
    assert m.msg_id == r0.msg_id and store.message.parse_msg_id(m.msg_id)[2] == r0.physical_offset
    assert s.units("T", 1, 0, 10) == [(rb.physical_offset, rb.size, 5)] * 3
    b = s.read("T", 1, 1)
    assert len(b.entries) == 1 and b.entries[0][0] == 0 and b.entries[0][1].batch_count == 3 and b.next_offset == 3
    assert [x.body for x in s.query_by_key("T", "k2")] == [b"hello"]
    assert [x.body for x in s.query_by_key("T", "U1")] == [b"world"]
    assert [x.body for x in s.query_by_key("T", "y")] == [b"batch-body"]
    assert s.query_by_key("T", "nope") == []
    assert s.read("T", 0, 0, tag_filter=lambda c: c == store.message.tag_hash("B")).entries[0][1].body == b"world"
    s.topics.create("T", 2, 2)
    s.write_config("custom", {"a": 1})
    offsets = OffsetTable(s, durable=True)
    offsets.commit("g@1", "T", 0, 2, "meta")
    s.flush()
    assert s.flushed_offset == s.max_physical_offset
    s.close()
    s.close()

    s = store.open(str(tmp_path), small_config())
    assert s.max_offset("T", 0) == 2 and s.max_offset("T", 1) == 3
    assert s.read("T", 0, 1).entries[0][1].body == b"world"
    assert s.topics.get("T").read_queues == 2 and s.read_config("custom", None) == {"a": 1}
    offsets = OffsetTable(s)
    assert offsets.fetch("g@1", "T", 0) == 2 and offsets.metadata("g@1", "T", 0) == "meta"
    assert offsets.group_offsets("g@1") == {("T", 0): 2} and offsets.groups() == ["g@1"]
    r = s.append(Message("T", 0, b"again"))
    assert r.queue_offset == 2
    s.close()


def test_iterate_spans_reads_and_files(tmp_path):
    s = store.open(str(tmp_path), small_config())
    for i in range(700):  # more than one read call and more than one CommitLog file
        s.append(Message("It", 0, b"m%d" % i + b"." * 200))
    s.append(Message("It", 0, b"batch", {}, batch_count=4))
    got = list(s.iterate("It", 0))
    assert [q for q, _m in got] == list(range(700)) + [700]
    assert got[5][1].body.startswith(b"m5.") and got[-1][1].batch_count == 4
    assert [q for q, _m in s.iterate("It", 0, 698, 702)] == [698, 699, 700]
    assert [q for q, _m in s.iterate("It", 0, 702)] == [700]  # a start inside a batch yields the batch
    assert list(s.iterate("It", 0, 704)) == [] and list(s.iterate("Nope", 0)) == []
    s.close()


def test_rollover_and_offset_for_timestamp(tmp_path):
    s = store.open(str(tmp_path), small_config())
    results = [s.append(Message("T", 0, bytes([i % 256]) * 1000)) for i in range(300)]
    assert len(s.commitlog.starts) > 3
    assert all(r.physical_offset // (64 * 1024) == (r.end_offset - 1) // (64 * 1024) for r in results)
    got = []
    off = 0
    while off < 300:
        res = s.read("T", 0, off, max_count=50)
        got.extend(m.body for _, m in res.entries)
        off = res.next_offset
    assert got == [bytes([i % 256]) * 1000 for i in range(300)]
    ts = results[150].store_timestamp
    o = s.offset_for_timestamp("T", 0, ts)
    assert results[o].store_timestamp >= ts and (o == 0 or results[o - 1].store_timestamp < ts)
    assert s.offset_for_timestamp("T", 0, ts + 10**9) == 300
    s.close()


def test_dispatch_units_for_views(tmp_path):
    """Units without a CommitLog write (a view's, pointing at a base entry) go through the dispatchers."""
    s = store.open(str(tmp_path), small_config())
    seen = []
    s.add_dispatcher(Recorder(seen))
    r = s.append(Message("base", 0, b"x", {"TAGS": "A"}))
    s.dispatch([store.DispatchRequest("view", 0, 0, 1, r.physical_offset, r.size, r.store_timestamp, 0, (7,),
                                      None, {})])
    assert s.max_offset("view", 0) == 1
    assert seen[-1] == ("view", 0, 1)
    res = s.read("view", 0, 0)
    assert res.entries[0][0] == 0 and res.entries[0][1].body == b"x" and res.next_offset == 1
    assert s.units("view", 0, 0, 5) == [(r.physical_offset, r.size, 7)]
    assert s.queues("view") == [0]
    s.close()


def test_index_rollover_and_time_range(tmp_path):
    s = store.open(str(tmp_path), small_config(index_slots=8, index_entries=20))
    rs = [s.append(Message("T", 0, b"%d" % i, {"KEYS": "same", "UNIQ_KEY": f"u{i}"})) for i in range(50)]
    s.flush()
    assert len(s.index.files) >= 5
    got = s.query_by_key("T", "same", max_num=100)
    assert sorted(m.physical_offset for m in got) == [r.physical_offset for r in rs]
    assert [m.body for m in s.query_by_key("T", "u7")] == [b"7"]
    assert s.query_by_key("T", "same", begin_ms=rs[-1].store_timestamp + 5000) == []
    assert len(s.query_by_key("T", "same", max_num=3)) == 3
    s.close()
    s = store.open(str(tmp_path), small_config(index_slots=8, index_entries=20))
    assert [m.body for m in s.query_by_key("T", "u49")] == [b"49"]
    s.close()


def test_offset_table_durable(tmp_path):
    s = store.open(str(tmp_path), small_config())
    t = OffsetTable(s, durable=True)
    t.commit("g1", "A", 0, 5)
    t.commit("g1", "A", 1, 7, "m")
    t.commit("g2", "A", 0, 1)
    t.delete_group("g2")
    # durable: on disk without persist(); RocketMQ's layout
    doc = s.read_config("consumerOffset.json")
    assert doc["offsetTable"] == {"A@g1": {"0": 5, "1": 7}}
    t2 = OffsetTable(s)
    assert t2.groups() == ["g1"] and t2.fetch("g1", "A", 1) == 7 and t2.metadata("g1", "A", 1) == "m"
    assert t2.fetch("g2", "A", 0) is None and t2.fetch("g1", "A", 9) is None
    lazy = OffsetTable(s)
    lazy.commit("g3", "A", 0, 1)
    assert "A@g3" not in s.read_config("consumerOffset.json")["offsetTable"]
    lazy.persist()
    assert s.read_config("consumerOffset.json")["offsetTable"]["A@g3"] == {"0": 1}
    s.close()


def test_large_bodies_across_files(tmp_path):
    """Big entries (written with pwritev) and small ones (joined) interleaved across file boundaries."""
    s = store.open(str(tmp_path), small_config(commitlog_file_size=256 * 1024, max_message_size=200 * 1024))
    bodies = [bytes([i]) * (150_000 if i % 3 == 0 else 10) for i in range(30)]
    for i in range(0, 30, 3):
        s.append_many([Message("T", 0, b, batch_count=2 if len(b) > 100 else 1) for b in bodies[i:i + 3]])
    s.close()
    s = store.open(str(tmp_path), small_config(commitlog_file_size=256 * 1024, max_message_size=200 * 1024))
    got = s.read("T", 0, 0, max_count=100, max_bytes=1 << 30)
    assert [m.body for _, m in got.entries] == bodies and got.next_offset == 40
    s.close()


def test_corrupt_config_is_set_aside(tmp_path):
    s = store.open(str(tmp_path), small_config())
    s.topics.create("A")
    s.close()
    (tmp_path / "config" / "topics.json").write_text("{not json")
    s = store.open(str(tmp_path), small_config())
    assert s.topics.names() == [] and (tmp_path / "config" / "topics.json.corrupt").exists()
    s.topics.create("B")
    s.close()
    s = store.open(str(tmp_path), small_config())
    assert s.topics.names() == ["B"]
    s.close()


def test_queue_ids_of_a_topic_follow_creates_deletes_and_reopen(tmp_path):
    """`queues(topic)` (kept per topic, not found by a scan of every queue) after appends to new
    queues, a deleted topic, a topic made again, and a reopen."""
    s = store.open(str(tmp_path), small_config())
    s.topics.create("A", 4, 4)
    s.topics.create("B", 4, 4)
    for topic, qid in (("A", 2), ("A", 0), ("B", 1), ("AB", 3)):
        s.append(Message(topic, qid, b"x", {}))
    assert (s.queues("A"), s.queues("B"), s.queues("AB"), s.queues("C")) == ([0, 2], [1], [3], [])
    s.topics.delete("A")
    assert s.queues("A") == [] and s.queues("AB") == [3]
    s.topics.create("A", 4, 4)
    s.append(Message("A", 1, b"y", {}))
    assert s.queues("A") == [1]
    s.close()
    s = store.open(str(tmp_path), small_config())
    assert (s.queues("A"), s.queues("B"), s.queues("AB")) == ([1], [1], [3])
    s.close()


def test_a_lite_message_without_keys_is_indexed_under_its_lite_topic(tmp_path):
    """A lite message (RIP-83 __LITE_TOPIC) is found as key `<parent>#<lite topic>` even with no KEYS
    and no UNIQ_KEY (a raw remoting send, a Kafka record with the header): the lite index."""
    s = store.open(str(tmp_path), small_config())
    r = s.append(Message("P", 0, b"lite", {"__LITE_TOPIC": "L1"}))
    assert s.index.lookup("P#L1", 0, r.store_timestamp + 1000, 10) == [r.physical_offset]
    s.close()


def test_index_flush_writes_back_with_fdatasync_and_the_entries_stay_readable(tmp_path, monkeypatch):
    """IndexFile.flush goes through os.fdatasync of the file (it releases the GIL; CPython's
    mmap.flush does not, and stopped the event loop while the index was written back), and what
    was indexed is there after the flush and after reopening."""
    import os
    from store import indexfile
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(indexfile.os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    path = str(tmp_path / "index")
    f = indexfile.IndexFile(path, 64, 256, create=True)
    f.put("T#KEY1", 4096, 1_700_000_000_000)
    f.flush()
    assert synced == [f.fd]
    assert f.lookup("T#KEY1", 0, 2_000_000_000_000, 10) == [4096]
    f.close()
    again = indexfile.IndexFile(path, 64, 256, create=False)
    assert again.lookup("T#KEY1", 0, 2_000_000_000_000, 10) == [4096]
    again.close()
