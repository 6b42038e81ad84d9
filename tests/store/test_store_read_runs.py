"""Store.read reading adjacent entries together, and its raw mode (store.api.RawEntry)."""
import os

import store
from store import Message, StoreConfig
from store.api import RawEntry


def config():
    return StoreConfig(commitlog_file_size=64 * 1024, cq_units_per_file=100, index_slots=64, index_entries=256)


def fill(s, n=400):
    """Four queues interleaved in the CommitLog, a few inner batches and non-ASCII entries among them,
    over several CommitLog files."""
    for i in range(n):
        if i % 37 == 5:
            s.append(Message("T", i % 4, b"b%d" % i, {}, batch_count=2))
        else:
            s.append(Message("T", i % 4, b"x" * (i % 300), {"TAGS": "A" if i % 3 else "B", "n": str(i) if i % 11 else "é"}))


def every(s, q, **kw):
    out, off = [], 0
    while True:
        r = s.read("T", q, off, **kw)
        out.extend(r.entries)
        if r.next_offset <= off:
            return out
        off = r.next_offset


def test_raw_read_gives_the_same_entries_in_the_same_places(tmp_path):
    s = store.open(str(tmp_path), config())
    fill(s)
    for q in range(4):
        for kw in ({}, {"max_count": 7}, {"max_count": 32, "max_bytes": 900}):
            decoded = every(s, q, **kw)
            raw = every(s, q, raw=True, **kw)
            assert [(o, m.raw) for o, m in decoded] == [(o, m.raw) for o, m in raw]
            assert [(m.sys_flag, m.topic, m.queue_id) for _o, m in decoded] == [(m.sys_flag, m.topic, m.queue_id) for _o, m in raw]
            assert [o for o, _m in decoded] == [m.queue_offset for _o, m in decoded]
            kinds = {type(m) for _o, m in raw}
            assert RawEntry in kinds and len(kinds) == 2  # inner batches and non-ASCII entries come decoded
        tagged = every(s, q, raw=True, tag_filter=lambda c: c == store.message.tag_hash("B"))
        assert [m.raw for _o, m in tagged] == [m.raw for _o, m in every(s, q) if m.properties.get("TAGS") == "B"]
    s.close()


def test_a_corrupt_entry_is_skipped_in_both_modes(tmp_path):
    s = store.open(str(tmp_path), config())
    fill(s, 40)
    victim = s.read("T", 2, 3, max_count=1).entries[0][1]
    path = os.path.join(str(tmp_path), "commitlog", f"{0:020d}")
    with open(path, "r+b") as f:  # flip one body byte: the body CRC no longer matches
        f.seek(victim.physical_offset + store.message.BODY_AT)
        byte = f.read(1)
        f.seek(victim.physical_offset + store.message.BODY_AT)
        f.write(bytes([byte[0] ^ 0xFF]))
    for raw in (True, False):
        got = every(s, 2, raw=raw)
        assert [o for o, _m in got] == [o for o in range(10) if o != 3]
    assert s.is_quarantined(victim.physical_offset)
    s.close()
