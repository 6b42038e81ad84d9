"""The topic journal (store.topic_journal): changes appended and fsynced in batches, snapshots to
topics.json, and a recovery that replays the journal, cuts a torn or corrupt tail and never fails."""
from __future__ import annotations

import json
import os
import random
import shutil
import threading
import uuid

import pytest

from store import topic_journal
from store.config import ConfigDir, TopicTable
from store.topic_journal import JOURNAL, SNAPSHOT, decode_records, encode_record


class InlineWriter:
    """The gateway's writer service reduced to its contract: numbered submissions, written on demand."""

    def __init__(self) -> None:
        self.pending = {}
        self.count = 0

    def submit(self, name, obj):
        self.count += 1
        self.pending[name] = obj
        return self.count

    def write(self):
        for obj in self.pending.values():
            obj.write()
            obj.join_snapshot()  # a snapshot runs on a thread of its own: the tests look at its result
        self.pending.clear()


def journalled(directory):
    table = TopicTable(ConfigDir(str(directory)))
    writer = InlineWriter()
    table.use_writer(writer)
    return table, writer


def state(table: TopicTable) -> dict:
    return {n: (c.read_queues, c.write_queues, c.perm, c.attributes) for n, c in
            ((n, table.get(n)) for n in sorted(table.names()))}


def journal_bytes(directory) -> bytes:
    path = os.path.join(str(directory), JOURNAL)
    return open(path, "rb").read() if os.path.exists(path) else b""


def test_a_change_is_one_journal_record_and_topics_json_is_not_rewritten(tmp_path):
    table, writer = journalled(tmp_path)
    before = (tmp_path / SNAPSHOT).read_bytes() if (tmp_path / SNAPSHOT).exists() else None
    table.create("A", 3, 3, attributes={"retention.ms": "1000"})
    writer.write()
    records, good = decode_records(journal_bytes(tmp_path))
    assert good == len(journal_bytes(tmp_path))
    assert [(r["op"], r["name"], r["topic"]["readQueueNums"], r["topic"]["attributes"]) for r in records] == [
        ("put", "A", 3, {"retention.ms": "1000"})]
    assert ((tmp_path / SNAPSHOT).read_bytes() if (tmp_path / SNAPSHOT).exists() else None) == before
    assert state(TopicTable(ConfigDir(str(tmp_path)))) == {"A": (3, 3, 6, {"retention.ms": "1000"})}


def test_changes_queued_together_share_one_fsync(tmp_path, monkeypatch):
    table, writer = journalled(tmp_path)
    syncs = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (syncs.append(fd), real(fd)))
    for i in range(5):
        table.create(f"T{i}", 1, 1)
    writer.write()
    assert len(syncs) == 1
    assert len(decode_records(journal_bytes(tmp_path))[0]) == 5


def test_the_close_folds_the_journal_into_topics_json_in_rocketmq_layout(tmp_path):
    table, writer = journalled(tmp_path)
    table.create("A", 2, 2)
    table.create("B", 1, 1)
    table.delete("B")
    writer.write()
    table.close()
    doc = json.loads((tmp_path / SNAPSHOT).read_text())
    assert doc["topicConfigTable"]["A"] == {
        "topicName": "A", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6, "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0, "order": False, "attributes": {},
        "topicId": str(uuid.UUID(bytes=table.get("A").topic_id))}  # the gateway's one addition (KIP-516)
    assert "B" not in doc["topicConfigTable"] and doc["dataVersion"]["counter"] == 3
    assert journal_bytes(tmp_path) == b""


def random_changes(table: TopicTable, rng: random.Random, count: int) -> None:
    for _ in range(count):
        name = f"t{rng.randrange(40)}"
        roll = rng.random()
        if roll < 0.6:
            table.create(name, rng.randrange(1, 9), rng.randrange(1, 9), attributes={"k": str(rng.random())})
        elif roll < 0.8 and table.get(name) is not None:
            cfg = table.get(name)
            cfg.perm = rng.choice([2, 4, 6])
            table.update(cfg)
        else:
            table.delete(name)


@pytest.mark.parametrize("seed", range(6))
def test_snapshots_plus_journal_replay_give_the_table_that_was_written(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(topic_journal, "SNAPSHOT_CHANGES", 7)  # several snapshots in the run
    rng = random.Random(seed)
    batches = [(rng.randrange(1, 6), rng.random()) for _ in range(30)]
    table, writer = journalled(tmp_path / "j")
    in_place = TopicTable(ConfigDir(str(tmp_path / "p")))  # the whole topics.json at each change
    for size, batch_seed in batches:
        random_changes(table, random.Random(batch_seed), size)
        writer.write()
        random_changes(in_place, random.Random(batch_seed), size)
    monkeypatch.setattr(topic_journal, "SNAPSHOT_CHANGES", 10**9)
    for t in (table, in_place):
        t.create("last", 1, 1)
    writer.write()
    records = decode_records(journal_bytes(tmp_path / "j"))[0]
    assert records and records[0]["v"] > 1, "snapshots were written and the journal holds the newest changes"
    reopened = TopicTable(ConfigDir(str(tmp_path / "j")))  # no close: as after a kill -9
    assert state(reopened) == state(table) == state(in_place)
    assert reopened.data_version["counter"] == table.data_version["counter"] == in_place.data_version["counter"]


def test_records_already_in_the_snapshot_are_not_replayed_again(tmp_path):
    """A crash after topics.json was replaced but before the journal was emptied."""
    table, writer = journalled(tmp_path)
    table.create("A", 1, 1)
    table.delete("A")
    table.create("A", 5, 5)
    writer.write()
    kept = journal_bytes(tmp_path)
    table.close()  # snapshot written, journal emptied
    (tmp_path / JOURNAL).write_bytes(kept + encode_record(
        {"v": 1, "op": "del", "name": "A"}))  # stale: older than the snapshot's counter
    assert state(TopicTable(ConfigDir(str(tmp_path)))) == {"A": (5, 5, 6, {})}


def test_a_torn_tail_is_cut_at_recovery_and_the_journal_goes_on(tmp_path):
    table, writer = journalled(tmp_path)
    table.create("A", 1, 1)
    table.create("B", 1, 1)
    writer.write()
    whole = journal_bytes(tmp_path)
    torn = encode_record({"v": 99, "op": "put", "name": "C", "topic": {"readQueueNums": 1}})[:-7]
    (tmp_path / JOURNAL).write_bytes(whole + torn)
    reopened, writer = journalled(tmp_path)
    assert sorted(reopened.names()) == ["A", "B"]
    assert (tmp_path / (JOURNAL + ".corrupt")).read_bytes() == torn
    reopened.create("D", 1, 1)
    writer.write()
    assert sorted(TopicTable(ConfigDir(str(tmp_path))).names()) == ["A", "B", "D"]


def test_a_flipped_byte_stops_the_replay_at_that_record(tmp_path):
    table, writer = journalled(tmp_path)
    for name in "ABC":
        table.create(name, 1, 1)
        writer.write()
    data = bytearray(journal_bytes(tmp_path))
    second = data.index(b"\n") + 1
    data[second + 30] ^= 0x01  # inside B's record: its CRC no longer matches
    (tmp_path / JOURNAL).write_bytes(bytes(data))
    assert TopicTable(ConfigDir(str(tmp_path))).names() == ["A"]


@pytest.mark.parametrize("seed", range(20))
def test_a_garbage_journal_never_fails_the_start(tmp_path, seed):
    rng = random.Random(seed)
    table, writer = journalled(tmp_path)
    table.create("Kept", 1, 1)
    writer.write()
    good = journal_bytes(tmp_path)
    garbage = [
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))),
        b"%08x {}\n" % 0,
        b"zzzzzzzz " + b'{"v":5}\n',
        encode_record({"v": "x", "op": "put", "name": "N", "topic": {}}),
        encode_record({"v": 7, "op": "put", "name": "N", "topic": "not a dict"}),
        encode_record({"v": 7, "op": "nope", "name": "N"}),
        b"\n\n\n",
        encode_record({"v": 8, "op": "put", "name": "Bad", "topic": {"readQueueNums": "many", "attributes": 3}}),
    ][seed % 8]
    (tmp_path / JOURNAL).write_bytes(good + garbage)
    names = TopicTable(ConfigDir(str(tmp_path))).names()
    assert "Kept" in names and "Bad" not in names


@pytest.mark.parametrize("doc", [b"[1, 2]", b'{"topicConfigTable": [["A", 1]], "dataVersion": "x"}',
                                 b'{"topicConfigTable": {"A": 5, "B": {"perm": "rw"}}}'])
def test_a_strange_topics_json_never_fails_the_start(tmp_path, doc):
    (tmp_path / SNAPSHOT).write_bytes(doc)
    table, writer = journalled(tmp_path)
    table.create("C", 1, 1)
    writer.write()
    assert TopicTable(ConfigDir(str(tmp_path))).names() == ["C"]


def test_a_failed_append_is_cut_back_and_written_again_in_order(tmp_path, monkeypatch):
    table, writer = journalled(tmp_path)
    table.create("A", 1, 1)
    writer.write()
    real_write = os.write
    calls = []

    def half_then_fail(fd, data):
        if not calls:
            calls.append(fd)
            real_write(fd, bytes(data)[:10])  # part of the batch reached the file
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_fail)
    table.create("B", 1, 1)
    with pytest.raises(OSError):
        writer.write()
    monkeypatch.setattr(os, "write", real_write)
    table.create("C", 1, 1)
    writer.pending[TopicTable.FILE].write()
    records, good = decode_records(journal_bytes(tmp_path))
    assert good == len(journal_bytes(tmp_path))
    assert [r["name"] for r in records] == ["A", "B", "C"]


def async_journalled(directory):
    """The table as the gateway runs it with `--flush async`."""
    table = TopicTable(ConfigDir(str(directory)))
    writer = InlineWriter()
    table.use_writer(writer, sync=False)
    return table, writer


def counting_fdatasync(monkeypatch) -> list:
    syncs = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (syncs.append(fd), real(fd)))
    return syncs


def test_async_mode_appends_on_the_spot_and_leaves_the_fdatasync_to_the_flusher(tmp_path, monkeypatch):
    table, writer = async_journalled(tmp_path)
    syncs = counting_fdatasync(monkeypatch)
    for i in range(5):
        table.create(f"T{i}", 1, 1)
    assert [r["name"] for r in decode_records(journal_bytes(tmp_path))[0]] == [f"T{i}" for i in range(5)]
    assert syncs == [] and writer.pending == {} and table.submission == 0  # nothing for the caller to wait on
    table.sync_journal()  # the store's flusher
    assert len(syncs) == 1
    table.sync_journal()  # nothing new: no fdatasync
    assert len(syncs) == 1
    assert sorted(TopicTable(ConfigDir(str(tmp_path))).names()) == [f"T{i}" for i in range(5)]


def test_sync_mode_appends_and_fsyncs_in_the_writer_only(tmp_path, monkeypatch):
    table, writer = journalled(tmp_path)
    syncs = counting_fdatasync(monkeypatch)
    table.create("A", 1, 1)
    assert journal_bytes(tmp_path) == b"" and syncs == [] and table.submission == writer.count == 1
    table.sync_journal()  # the flusher leaves it to the writer
    assert syncs == []
    writer.write()
    assert len(syncs) == 1 and [r["name"] for r in decode_records(journal_bytes(tmp_path))[0]] == ["A"]


def test_an_async_append_that_fails_is_handed_to_the_writer_and_kept_in_order(tmp_path, monkeypatch):
    table, writer = async_journalled(tmp_path)
    table.create("A", 1, 1)
    real_write = os.write

    def fail(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", fail)
    table.create("B", 1, 1)
    assert table.submission == 1 and TopicTable.FILE in writer.pending
    monkeypatch.setattr(os, "write", real_write)
    table.create("C", 1, 1)  # queued behind B, not appended before it
    assert table.submission == 2
    writer.write()
    assert [r["name"] for r in decode_records(journal_bytes(tmp_path))[0]] == ["A", "B", "C"]
    table.create("D", 1, 1)  # appended on the spot again
    assert table.submission == 2 and writer.pending == {}
    assert sorted(TopicTable(ConfigDir(str(tmp_path))).names()) == ["A", "B", "C", "D"]


class HeldSnapshot:
    """Holds the snapshot thread inside its topics.json write until released."""

    def __init__(self, monkeypatch, config_cls=ConfigDir) -> None:
        self.inside, self.release = threading.Event(), threading.Event()
        real = config_cls.write_bytes

        def held(config, name, data):
            if name == SNAPSHOT and threading.current_thread().name == "topics-snapshot":
                self.inside.set()
                assert self.release.wait(60)
            real(config, name, data)

        monkeypatch.setattr(config_cls, "write_bytes", held)


@pytest.mark.parametrize("sync", [False, True])
def test_creates_go_on_while_a_snapshot_is_written_and_a_kill_mid_snapshot_keeps_them_all(
        tmp_path, monkeypatch, sync):
    monkeypatch.setattr(topic_journal, "SNAPSHOT_CHANGES", 10)
    held = HeldSnapshot(monkeypatch)
    table = TopicTable(ConfigDir(str(tmp_path / "d")))
    writer = InlineWriter()
    table.use_writer(writer, sync=sync)
    journal = table._journal
    names = []
    for i in range(25):  # the snapshot starts at the 10th: the next ones are appended while it is held
        names.append(f"T{i:02d}")
        table.create(names[-1], 1, 1)
        for obj in writer.pending.values():
            obj.write()  # the writer thread, without waiting for the snapshot
        writer.pending.clear()
        if i == 9:
            assert held.inside.wait(60)
    assert journal._snapshotter is not None, "the snapshot is still held: the creates did not wait for it"
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "d", crashed)  # the files as a kill -9 right now leaves them
    assert sorted(TopicTable(ConfigDir(str(crashed))).names()) == names
    held.release.set()
    journal.join_snapshot()
    left = [p for _, p in topic_journal.renamed_journals(str(tmp_path / "d" / JOURNAL))]
    assert left == []  # topics.json holds what the renamed journal held
    doc = json.loads((tmp_path / "d" / SNAPSHOT).read_text())
    assert sorted(doc["topicConfigTable"]) == names[:10]  # the table as of the rotation
    assert sorted(TopicTable(ConfigDir(str(tmp_path / "d"))).names()) == names


def test_a_failed_snapshot_keeps_the_renamed_journal_and_is_tried_again(tmp_path, monkeypatch):
    monkeypatch.setattr(topic_journal, "SNAPSHOT_CHANGES", 3)
    monkeypatch.setattr(topic_journal, "SNAPSHOT_RETRY_S", 0.0)
    real = ConfigDir.write_bytes
    failures = []

    def full_once(config, name, data):
        if name == SNAPSHOT and not failures:
            failures.append(name)
            raise OSError(28, "No space left on device")
        real(config, name, data)

    monkeypatch.setattr(ConfigDir, "write_bytes", full_once)
    table, writer = async_journalled(tmp_path)
    for name in "ABC":
        table.create(name, 1, 1)
    table._journal.join_snapshot()
    assert failures == [SNAPSHOT]
    assert len(topic_journal.renamed_journals(str(tmp_path / JOURNAL))) == 1
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path, crashed, ignore=shutil.ignore_patterns("crashed"))
    assert sorted(TopicTable(ConfigDir(str(crashed))).names()) == ["A", "B", "C"]
    table.create("D", 1, 1)  # the retry is due: it runs again
    table._journal.join_snapshot()
    assert topic_journal.renamed_journals(str(tmp_path / JOURNAL)) == []
    assert sorted(json.loads((tmp_path / SNAPSHOT).read_text())["topicConfigTable"]) == ["A", "B", "C", "D"]
    table.close()
    assert sorted(TopicTable(ConfigDir(str(tmp_path))).names()) == ["A", "B", "C", "D"]


def test_a_growing_table_is_still_snapshotted_each_time_it_doubles(tmp_path, monkeypatch):
    monkeypatch.setattr(topic_journal, "SNAPSHOT_CHANGES", 10)
    table, writer = journalled(tmp_path)
    for i in range(100):
        table.create(f"T{i:03d}", 1, 1)
        writer.write()
    doc = json.loads((tmp_path / SNAPSHOT).read_text())
    assert len(doc["topicConfigTable"]) == 80  # snapshots at 10, 20, 40 and 80 topics
    assert [r["name"] for r in decode_records(journal_bytes(tmp_path))[0]] == [f"T{i:03d}" for i in range(80, 100)]


def test_a_rotation_that_cannot_open_a_new_journal_keeps_the_old_one_and_waits_before_trying_again(
        tmp_path, monkeypatch):
    monkeypatch.setattr(topic_journal, "SNAPSHOT_CHANGES", 3)
    monkeypatch.setattr(topic_journal, "SNAPSHOT_RETRY_S", 1000.0)
    table, writer = async_journalled(tmp_path)
    attempts = []

    def no_fds(path):
        attempts.append(path)
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(topic_journal, "_open_journal", no_fds)
    for i in range(12):
        table.create(f"T{i:02d}", 1, 1)
        table._journal.join_snapshot()
    assert len(attempts) == 1  # not once per create while it fails
    assert topic_journal.renamed_journals(str(tmp_path / JOURNAL)) == []
    assert [r["name"] for r in decode_records(journal_bytes(tmp_path))[0]] == [f"T{i:02d}" for i in range(12)]
    assert sorted(TopicTable(ConfigDir(str(tmp_path))).names()) == [f"T{i:02d}" for i in range(12)]
