"""The tier in process over MemStore (fault injection and exact state): upload, commit, local
deletion only after the commit, reads below the local start, remote retention, disk loss."""
from __future__ import annotations

import hashlib
import json
import os
import time

import pytest
from crc32c import crc32c

from codec.remoting.message import Message
from store.api import StoreConfig
from store.objstore.api import ObjectStoreError
from store.tier.tiered import TieredStore
from store.tier.upload import Uploader
from tests.tier.memstore import MemStore

FILE = 4096
FAR = int(time.time() * 1000) + 365 * 86400_000


def open_store(path, objects, read_wait=10.0, **kw) -> TieredStore:
    st = TieredStore(str(path), StoreConfig(commitlog_file_size=FILE, **kw), objects=objects, read_wait=read_wait)
    st.recover()
    return st


def fill(st, topic="t", n=120, queue=0, tiered=True):
    if topic not in st.topics:
        st.topics.create(topic, 2, 2, attributes={"remote.storage.enable": "true" if tiered else "false",
                                                  "local.retention.ms": "0"})
    for i in range(n):
        st.append(Message(topic, queue, f"{topic}-{i}".encode() * 4, {"KEYS": f"k{i}"}))
    st.flush()


def two_topics_tiered(tmp_path):
    """Topics t and u, 60 messages each, uploaded and gone from the local disk."""
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st, "t", 60)
    fill(st, "u", 60)
    Uploader(st).round()
    st.delete_expired(FAR)
    return objects, st


def bodies(st, topic="t", queue=0, start=0):
    return [m.body for _q, m in st.iterate(topic, queue, start)]


def test_upload_then_local_delete_then_read_from_remote(tmp_path):
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st)
    before = bodies(st)
    assert st.delete_expired(FAR) == 0  # nothing committed yet: nothing goes
    done = Uploader(st).round()
    assert done >= 2 and any(k.startswith("manifests/") for k in objects.objects)
    assert st.delete_expired(FAR) >= 2
    assert st.local_min_offset("t", 0) > 0 == st.min_offset("t", 0)
    assert bodies(st) == before
    units = st.units("t", 0, 0, 3)
    assert [st.read_entry(p, s)[:4] != b"" for p, s, _c in units] == [True] * 3
    ts = st.get(units[0][0]).store_timestamp
    assert st.offset_for_timestamp("t", 0, ts) == 0
    assert [m.body for m in st.query_by_key("t", "k3")] == [b"t-3" * 4]  # its IndexFile is gone
    st.close()


def test_each_segment_put_carries_its_manifest_crc32c_and_piece_checksums(tmp_path):
    """One pass computes the object's CRC32C (sent with the PUT, recorded in the manifest) and the
    pieces' (what readers check)."""
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st)
    Uploader(st).round()
    refs = [r for m in st.remote.manifests.values() for r in m.segments]
    assert refs
    for r in refs:
        data = objects.objects[r.key]
        assert r.checksum == "crc32c" and r.sha256 == ""
        assert objects.checksums[r.key] == int(r.crc32c, 16) == crc32c(data)
        assert r.chunks == tuple(f"{crc32c(data[i:i + r.chunk]):08x}" for i in range(0, len(data), r.chunk))
    assert all(json.loads(objects.objects[k])["version"] == 2 for k in objects.objects if k.startswith("manifests/"))
    st.close()


def test_version_1_manifests_still_read_and_their_sha256_still_checked(tmp_path):
    objects, st = two_topics_tiered(tmp_path)
    before = bodies(st)
    ts = st.get(st.units("t", 0, 30, 1)[0][0]).store_timestamp
    st.close()
    objects.manifests_as_version_1()
    st = open_store(tmp_path / "b", objects)  # an empty data dir: restored from the version 1 manifests
    refs = st.remote.live("t", 0)
    assert refs and all(r.checksum == "sha256" and r.max_record_ts == -1 for r in refs)
    assert bodies(st) == before
    assert st.offset_for_timestamp("t", 0, ts) <= 30
    st.close()
    key = refs[0].key
    objects.objects[key] = bytes([objects.objects[key][0] ^ 1]) + objects.objects[key][1:]
    st = open_store(tmp_path / "c", objects)
    assert bodies(st)[:1] != before[:1]  # the damaged piece's entries are not served
    assert st.tier_stats.errors.get("checksum")
    st.close()


def _fails_then_catches_up(tmp_path, fault: str, value) -> None:
    """While `fault` is set on the store a round fails and no local file goes; then the retry commits
    and the files go, every record still read."""
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st)
    before = bodies(st)
    up = Uploader(st)
    setattr(objects, fault, value)
    with pytest.raises(ObjectStoreError):
        up.round()
    assert st.remote.manifests == {} and st.delete_expired(FAR) == 0  # not committed: nothing deleted
    setattr(objects, fault, type(value)())
    assert up.round() >= 2 and st.delete_expired(FAR) >= 2
    assert bodies(st) == before
    st.close()


def test_a_segment_damaged_on_its_way_up_is_refused_and_stays_local(tmp_path):
    _fails_then_catches_up(tmp_path, "corrupt_puts_matching", "segments/")


def test_store_down_nothing_deleted_then_catches_up(tmp_path):
    _fails_then_catches_up(tmp_path, "down", True)


def test_corrupt_segment_is_not_served_others_are(tmp_path):
    objects, st = two_topics_tiered(tmp_path)
    victim = next(k for k in sorted(objects.objects) if k.startswith("segments/t/"))
    objects.objects[victim] = objects.objects[victim][:-10]
    got = bodies(st, "t")
    assert len(got) < 60 and all(b.startswith(b"t-") for b in got)
    assert len(bodies(st, "u")) == 60
    assert st.tier_stats.errors.get("checksum")
    st.close()


def test_crash_between_segments_and_manifest_uploads_again(tmp_path):
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st)
    objects.fail_puts_matching = "manifests/"
    with pytest.raises(ObjectStoreError):
        Uploader(st).round()
    st.close()  # as after a kill -9: segments written, no manifest
    objects.fail_puts_matching = None
    st = open_store(tmp_path / "a", objects)
    assert st.remote.manifests == {}
    Uploader(st).round()
    st.delete_expired(FAR)
    assert len(bodies(st)) == 120
    st.close()


def test_disk_loss_restores_topics_and_tiered_data(tmp_path):
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st)
    Uploader(st).round()
    committed = st.remote.committed_end
    tiered = [b for q, m in st.iterate("t", 0) for b in [m.body] if m.physical_offset < committed]
    st.close()
    fresh = open_store(tmp_path / "b", objects)
    assert fresh.topics.get("t").attributes["remote.storage.enable"] == "true"
    assert bodies(fresh) == tiered
    end = fresh.max_offset("t", 0)
    r = fresh.append(Message("t", 0, b"after"))
    assert r.queue_offset == end and r.physical_offset >= committed
    fresh.close()
    again = open_store(tmp_path / "b", objects)  # restarted: continues, nothing served twice
    assert bodies(again)[-1] == b"after" and len(bodies(again)) == len(tiered) + 1
    again.close()


def test_remote_retention_deletes_whole_segments_of_that_topic(tmp_path):
    objects, st = two_topics_tiered(tmp_path)
    segments_before = len([k for k in objects.objects if k.startswith("segments/t/")])
    assert st.local_min_offset("t", 0) > 59
    assert st.delete_records("t", 0, 59) == 59
    up = Uploader(st)
    up.round()
    assert st.min_offset("t", 0) == 59
    assert bodies(st, "t")[0] == b"t-59" * 4
    assert len([k for k in objects.objects if k.startswith("segments/t/")]) < segments_before
    assert bodies(st, "u")[0] == b"u-0" * 4  # the other topic keeps its remote data
    st.topics.delete("u")
    up.round()
    assert not [k for k in objects.objects if k.startswith("segments/u/")]
    st.close()


def test_a_segment_on_its_way_is_waited_for_not_skipped(tmp_path):
    """A download slower than a reader waits: the reader gets nothing for now, never the local
    units after the gap (a Kafka consumer would jump over the tiered records)."""
    objects = MemStore()
    st = open_store(tmp_path / "a", objects, read_wait=0.0)
    fill(st, n=300)
    Uploader(st).round()
    st.delete_expired(FAR)
    local = st.local_min_offset("t", 0)
    get = objects.get
    objects.get = lambda *a, **kw: (time.sleep(1.0), get(*a, **kw))[1]
    assert st.units("t", 0, 0, 10_000) == []  # the download started, not done within the wait
    deadline = time.monotonic() + 10
    while not (units := st.units("t", 0, 0, 10_000)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert 0 < len(units) and all(u[1] > 0 for u in units)
    off = len(units)
    while off < local:  # the reader walks on through the tier, never jumping to the local start early
        more = st.units("t", 0, off, 10_000)
        if more:
            assert all(u[1] > 0 for u in more)
            off += len(more)
        else:
            time.sleep(0.1)
    assert off >= local
    st.close()


def test_copy_disabled_stops_uploads_delete_on_disable_drops_remote(tmp_path):
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st, n=60)
    up = Uploader(st)
    up.round()
    segments = {k for k in objects.objects if k.startswith("segments/t/")}
    assert segments
    cfg = st.topics.get("t")
    cfg.attributes["remote.log.copy.disable"] = "true"
    st.topics.update(cfg)
    fill(st, n=60)
    up.round()
    assert {k for k in objects.objects if k.startswith("segments/t/")} == segments  # nothing new copied
    cfg.attributes.update({"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"})
    st.topics.update(cfg)
    up.round()
    assert not [k for k in objects.objects if k.startswith("segments/t/")]
    assert bodies(st) == [f"t-{i}".encode() * 4 for i in range(60)] * 2  # all still local
    st.close()


def test_tier_unreachable_at_start(tmp_path):
    """An empty dir refuses to start (it could write over the tier); a dir with data starts, serves
    local data, and reads the manifests on the first round that reaches the store."""
    from store.tier.tiered import TierUnreachable
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st)
    Uploader(st).round()
    st.close()
    objects.down = True
    with pytest.raises(TierUnreachable):
        open_store(tmp_path / "empty", objects)
    st = open_store(tmp_path / "a", objects)
    assert st.remote.manifests == {} and len(bodies(st)) == 120
    objects.down = False
    Uploader(st).round()
    assert st.remote.manifests and st.delete_expired(FAR) >= 1 and len(bodies(st)) == 120
    st.close()


def test_local_retention_bytes_keeps_the_newest_bytes_local(tmp_path):
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    st.topics.create("t", 1, 1, attributes={"remote.storage.enable": "true", "local.retention.bytes": str(2 * FILE)})
    fill(st, n=200)
    Uploader(st).round()
    now = int(time.time() * 1000)
    assert st.delete_expired(now) >= 1  # by bytes: no file is old enough for a time limit
    kept = st.commitlog.starts
    newer = sum(r.size for s in kept if s in st.remote.manifests for r in st.remote.manifests[s].segments)
    assert newer >= 2 * FILE  # what stays local still holds the limit (as Kafka deletes segments)
    assert len(bodies(st)) == 200
    st.close()


def _entry_bytes(st, topic: str, below: int | None = None, queues=(0,)) -> int:
    """Bytes of the topic's entries at CommitLog offsets from the local start (and below `below`)."""
    total = 0
    for q in queues:
        for phys, size, _code in st.units(topic, q, 0, 100_000):
            if phys >= st.commitlog.begin and (below is None or phys < below):
                total += size
    return total


def test_local_bytes_per_topic_follow_appends_deletions_and_restarts(tmp_path):
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st, "u", 30)
    fill(st, "t", 60)  # its last entries stay in the open file
    assert st.local_bytes.by_topic(st.commitlog.starts) == {"t": _entry_bytes(st, "t"), "u": _entry_bytes(st, "u")}
    Uploader(st).round()
    st.delete_expired(FAR)
    local = st.local_bytes.by_topic(st.commitlog.starts)
    assert 0 < local["t"] == _entry_bytes(st, "t") < sum(s for _p, s, _c in st.units("t", 0, 0, 1000))
    st.close()
    st = open_store(tmp_path / "a", objects)  # a restart: the files before it are walked once
    fill(st, "t", 5)
    Uploader(st).round()
    assert st.local_bytes.by_topic(st.commitlog.starts)["t"] == _entry_bytes(st, "t")
    st.close()


def test_consumer_offsets_come_back_after_a_disk_loss(tmp_path):
    objects = MemStore()
    st = open_store(tmp_path / "a", objects)
    fill(st)
    table = {"offsetTable": {"t@g": {"0": 42, "1": 7}}}
    st.write_config("consumerOffset.json", table)
    Uploader(st).round()
    st.close()
    fresh = open_store(tmp_path / "b", objects)  # the disk is gone; the tier's copy is read back
    assert fresh.read_config("consumerOffset.json") == table
    fresh.close()


def test_a_file_is_walked_without_decoding_its_entries(tmp_path):
    """The upload's walk of a sealed file gives each entry's place, queue, offsets, store time and
    key hashes (what the segment index and key section need) as the stored entry has them."""
    from store.tier import entries
    from store.tier.upload import _read_file
    st = open_store(tmp_path / "a", MemStore())
    fill(st, n=40)
    start = st.commitlog.starts[0]
    walked = list(entries.scan(_read_file(st, start), start))
    assert walked
    first = st.get(start)
    e = walked[0]
    assert (e.pos, e.size) == (0, first.size)
    assert (e.topic, e.queue_id, e.queue_offset, e.count, e.store_timestamp, e.key_hashes) == \
        (first.topic, first.queue_id, first.queue_offset, 1, first.store_timestamp, (entries.key_hash("t#k0"),))
    st.close()
