"""Ranged reads from the tier, in process over MemStore: a read downloads only the checked pieces of a
segment it needs (plus its index), a piece damaged remotely is refused while the rest of the segment
is served, and a query by key reads only the entries the segment's key section names."""
from __future__ import annotations

import time
from types import SimpleNamespace

from codec.remoting.message import Message
from gateway.kafka.list_offsets import offset_for_time
from store.api import StoreConfig
from store.tier.segment import chunk_size
from store.tier.tiered import TieredStore
from store.tier.upload import Uploader
from tests.tier.memstore import MemStore

FILE = 256 << 10
FAR = int(time.time() * 1000) + 365 * 86400_000
N = 600


def tiered_store(path, objects) -> TieredStore:
    st = TieredStore(str(path), StoreConfig(commitlog_file_size=FILE), objects=objects, read_wait=10.0)
    st.recover()
    return st


def bodies_of(n: int) -> list[bytes]:
    return [b"%06d:" % i + b"x" * 1000 for i in range(n)]


def tiered(tmp_path):
    """(objects, store) with N 1 KB messages of topic t, its sealed files uploaded and gone locally."""
    objects = MemStore()
    st = tiered_store(tmp_path / "a", objects)
    st.topics.create("t", 1, 1, attributes={"remote.storage.enable": "true", "local.retention.ms": "0"})
    for i, body in enumerate(bodies_of(N)):
        st.append(Message("t", 0, body, {"KEYS": f"k{i}"}))
    st.flush()
    Uploader(st).round()
    st.delete_expired(FAR)
    assert st.local_min_offset("t", 0) > 0 and st.min_offset("t", 0) == 0
    return objects, st


def downloaded(st) -> int:
    return st.tier_stats.remote_read_bytes.get("t", 0)


def first_segment(st):
    return st.remote.live("t", 0)[0]


def test_a_small_read_downloads_only_the_pieces_it_needs(tmp_path):
    _objects, st = tiered(tmp_path)
    seg = first_segment(st)
    assert seg.chunk == chunk_size(FILE) and len(seg.chunks) > 4
    entries = st.read("t", 0, 0, max_count=1).entries
    assert [m.body for _o, m in entries] == bodies_of(1)
    small = downloaded(st)
    print(f"one 1 KB message from a {seg.size} B segment: {small} B downloaded (whole segment: {seg.size} B)")
    assert small < seg.size // 3  # its index tail and one piece
    whole = [m.body for _o, m in st.iterate("t", 0, 0) if m.queue_offset < st.local_min_offset("t", 0)]
    assert whole == bodies_of(len(whole))  # read on sequentially, piece by piece
    st.close()


def test_a_damaged_piece_is_refused_the_rest_of_its_segment_served(tmp_path):
    objects, st = tiered(tmp_path)
    seg = first_segment(st)
    data = bytearray(objects.objects[seg.key])
    data[seg.chunk + 100] ^= 0xFF  # one byte in the second piece, inside an entry
    objects.objects[seg.key] = bytes(data)
    served = [m.body for _o, m in st.iterate("t", 0, 0) if m.queue_offset < seg.end]
    expected = bodies_of(seg.end)
    assert set(served) < set(expected)  # nothing damaged is served...
    assert len(expected) - len(served) <= seg.chunk // 1000 + 2  # ...and only the damaged piece's entries are not
    assert served[0] == expected[0] and served[-1] == expected[-1]
    assert st.tier_stats.errors.get("checksum", 0) >= 1
    st.close()


def test_query_by_key_reads_only_the_entries_its_key_section_names(tmp_path):
    _objects, st = tiered(tmp_path)
    seg = first_segment(st)
    found = st.query_by_key("t", "k7")
    assert [m.body for m in found] == [bodies_of(8)[7]]
    by_key = downloaded(st)
    assert st.query_by_key("t", "no-such-key") == []
    print(f"query by key below the local start: {by_key} B downloaded; {len(st.remote.live('t', 0))} segments "
          f"of {sum(r.size for r in st.remote.live('t', 0))} B")
    assert by_key < seg.size
    st.close()


def test_a_reader_never_skips_an_entry_whose_piece_is_on_its_way(tmp_path):
    """As on the gateway's event loop (no read waits): a slow download delays a reader, which never
    takes an entry whose bytes are not there yet for a gone one (a pull would jump over it)."""
    objects, st = tiered(tmp_path)
    st.cache.read_wait = 0.0
    get = objects.get
    objects.get = lambda *a, **kw: (time.sleep(0.05), get(*a, **kw))[1]
    local = st.local_min_offset("t", 0)
    got, off, deadline = [], 0, time.monotonic() + 60
    while off < local and time.monotonic() < deadline:
        result = st.read("t", 0, off, max_count=32)
        got += [m.body for _o, m in result.entries]
        off = result.next_offset
        if not result.entries:
            time.sleep(0.02)
    assert got == bodies_of(local)
    st.close()


def test_a_search_by_record_time_reads_the_segment_holding_it_also_from_old_manifests(tmp_path):
    """ListOffsets by time (gateway.kafka.list_offsets.offset_for_time) on records whose times lie two
    hours before they were stored: the manifests' record time bounds send it to the one segment that
    holds the time; from version 1 manifests (no bounds) it still answers the same, reading from the
    first segment an hour before (by store time) on, as before."""
    base = int(time.time() * 1000) - 2 * 3600_000
    objects = MemStore()
    st = tiered_store(tmp_path / "a", objects)
    st.topics.create("t", 1, 1, attributes={"remote.storage.enable": "true", "local.retention.ms": "0"})
    for i, body in enumerate(bodies_of(4 * N)):
        st.append(Message("t", 0, body, born_timestamp=base + i * 1000))
    st.flush()
    Uploader(st).round()
    st.delete_expired(FAR)
    refs = st.remote.live("t", 0)
    target = next(r for r in refs if r.first > 0).first + 5
    holding = [r.key for r in refs if r.first <= target < r.end]
    assert len(refs) >= 3 and target < st.local_min_offset("t", 0)
    assert refs[0].min_record_ts == base and refs[0].max_record_ts == base + (refs[0].end - 1) * 1000
    app, cfg = SimpleNamespace(store=st), SimpleNamespace(attributes={})

    def search(store) -> tuple[tuple[int, int], set]:
        app.store, before = store, len(objects.gets)
        return offset_for_time(app, cfg, "t", 0, base + target * 1000), set(objects.gets[before:])

    found, read = search(st)
    assert found == (target, base + target * 1000)
    assert read <= {*holding, refs[refs.index(next(r for r in refs if r.key in holding)) + 1].key} and holding[0] in read
    st.close()
    objects.manifests_as_version_1()
    old = tiered_store(tmp_path / "b", objects)  # restored from the version 1 manifests
    found, read = search(old)
    assert found == (target, base + target * 1000)
    assert refs[0].key in read  # no bounds: read from the first segment on
    old.close()
