"""Smoke test of the store API the protocol layers use (docs/internals.md)."""
import store
from store import Message, StoreConfig
from semantics.offsets import OffsetTable


def small_config(**kw):
    base = dict(commitlog_file_size=64 * 1024, cq_units_per_file=100, index_slots=64, index_entries=256)
    base.update(kw)
    return StoreConfig(**base)


def test_append_read_reopen(tmp_path):
    s = store.open(str(tmp_path), small_config())
    seen = []
    s.add_listener(lambda t, q, n: seen.append((t, q, n)))
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
