"""`rocketgate store verify`: every CommitLog entry (magic, sizes, body CRC, its own offset, torn
tails), every ConsumeQueue unit against the entry it points to and every entry against its unit,
every IndexFile entry against the entry it points to (its key hash among the entry's keys) and
every keyed entry against the index; quarantined entries (config/quarantine.json) are listed.

Entries past a derived directory's checkpoint that its files do not cover yet are `pending` (a
gateway that was killed: recovery re-dispatches them at the next start), not damage."""
from __future__ import annotations

import os
import time

from codec.formats.store import IndexEntry, IndexHeader  # noqa: F401 - IndexEntry: ENTRY's definition
from codec.remoting import message as M
from store.dispatch import REWRITE
from store.indexfile import ENTRY, key_hash
from store.topic_journal import JOURNAL, apply_record, decode_records, renamed_journals, snapshot_table
from store.tool.files import CommitLogFiles, Progress, checkpoint, config, consume_queues

INDEX_HEADER = IndexHeader.sizeof()
SOURCE_ATTR = "filter.source.topic"


class Report:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        self.counts: dict[str, int] = {}
        self.damage: list[dict] = []
        self.notes: list[str] = []

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def bad(self, where: str, what: str) -> None:
        self.damage.append({"where": where, "what": what})

    def as_dict(self) -> dict:
        return {"data_dir": self.data_dir, "ok": not self.damage, "counts": self.counts,
                "damage": self.damage, "notes": self.notes}


def _topics(data_dir: str) -> dict[str, dict]:
    """The topic table as the gateway's recovery would load it (topics.json, then the journals'
    newer records), without folding anything: read-only, also beside a live gateway."""
    table, version = snapshot_table(config(data_dir, "topics.json", {}))
    path = os.path.join(data_dir, "config", JOURNAL)
    if not os.path.isdir(os.path.dirname(path)):
        return table
    for file in [p for _v, p in renamed_journals(path)] + [path]:
        try:
            with open(file, "rb") as f:
                records, _good = decode_records(f.read())
        except FileNotFoundError:
            continue
        for record in records:
            if record["v"] > version:
                apply_record(table, record)
                version = record["v"]
    return table


def _quarantined(data_dir: str) -> dict[int, str]:
    doc = config(data_dir, "quarantine.json", {})
    entries = doc.get("entries") if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {int(k): str(v) for k, v in entries.items() if str(k).lstrip("-").isdigit()}


def _cached_entry(cl: CommitLogFiles, cache: dict, phys: int, size: int | None = None):
    hit = cache.get(phys)
    if hit is None:
        if len(cache) > 4096:
            cache.clear()
            cl.release()
        hit = cache[phys] = cl.entry(phys, size)
    return hit


def _cached_summary(cl: CommitLogFiles, cache: dict, phys: int, size: int):
    hit = cache.get((phys, size))
    if hit is None:
        if len(cache) > 1024:  # page faults map ~64 KiB around each read: keep the mapped set small
            cache.clear()
            cl.release()
        hit = cache[(phys, size)] = cl.summary(phys, size)
    return hit


def verify(data_dir: str, progress_out=None, commitlog_file_size: int = 1 << 30, index_slots: int = 5_000_000,
           live: bool = False) -> dict:
    """The report (`ok` False on damage). `live`: a gateway holds the dir, so a torn entry at the
    very end of the CommitLog is one being written, not damage."""
    began = time.monotonic()
    report = Report(data_dir)
    # The checkpoints before the CommitLog is mapped: on a live gateway a checkpoint never covers
    # more than the mapped CommitLog, so what points past both was written after this began.
    cq_ck = checkpoint(os.path.join(data_dir, "consumequeue"))
    index_ck = checkpoint(os.path.join(data_dir, "index"))
    cl = CommitLogFiles(data_dir, commitlog_file_size)
    quarantined = _quarantined(data_dir)
    topics = _topics(data_dir)
    queues = consume_queues(data_dir)
    cache: dict = {}
    indexed = _check_index(data_dir, cl, cache, report, index_slots, index_ck)
    _check_queues(queues, topics, cl, report, cq_ck, progress_out)
    progress = Progress(cl.total, progress_out)
    missing_queues = set()
    for phys, kind, value in cl.walk(progress=progress):
        if kind == "blank":
            report.count("blank markers")
            continue
        if kind == "damage":
            if live and value.startswith("torn tail") and phys >= cl.files[-1][0]:
                report.notes.append(f"CommitLog {phys}: an entry being written ({value})")
                continue
            if phys in quarantined:
                report.count("quarantined entries")
                report.notes.append(f"CommitLog {phys}: quarantined ({quarantined[phys]})")
            report.bad(f"CommitLog {phys}", value)
            continue
        msg = value
        report.count("entries")
        report.count("entry bytes", msg.size)
        _entry_against_queue(msg, phys, queues, topics, cq_ck, cl, cache, report, missing_queues)
        _entry_against_index(msg, phys, indexed, index_ck, report)
    for phys, why in sorted(quarantined.items()):
        if not any(d["where"] == f"CommitLog {phys}" for d in report.damage):
            report.notes.append(f"CommitLog {phys}: in quarantine.json ({why}) but reads sound now")
    seconds = time.monotonic() - began
    out = report.as_dict()
    out.update(commitlog={"files": len(cl.files), "begin": cl.begin, "end": cl.end, "bytes": cl.total},
               consumequeue_checkpoint=cq_ck, index_checkpoint=index_ck, seconds=round(seconds, 3),
               mb_per_s=round(cl.total / 1e6 / max(seconds, 1e-9), 1))
    return out


def _entry_against_queue(msg, phys, queues, topics, cq_ck, cl, cache, report, missing_queues) -> None:
    """The entry's unit is in its queue and points back at it (or at a compacted copy)."""
    if msg.topic not in topics or REWRITE in msg.properties:
        return  # a deleted topic's entries stay in the CommitLog until retention; rewrites re-serve old offsets
    key = (msg.topic, msg.queue_id)
    cq = queues.get(key)
    covered = cq_ck is not None and phys < cq_ck
    if cq is None:
        if covered and key not in missing_queues:
            missing_queues.add(key)
            report.bad(f"ConsumeQueue {msg.topic}/{msg.queue_id}", "missing (its entries are in the CommitLog)")
        elif not covered:
            report.count("entries pending dispatch")
        return
    if msg.queue_offset < cq.min_offset:
        return  # retention or DeleteRecords moved the queue past it
    unit = cq.unit(msg.queue_offset)
    if unit is None:
        if covered:
            report.bad(f"CommitLog {phys}", f"no unit at {msg.topic}/{msg.queue_id} offset {msg.queue_offset}")
        else:
            report.count("entries pending dispatch")
        return
    if unit[0] != phys:
        target, _why = _cached_entry(cl, cache, unit[0])
        if target is None or REWRITE not in target.properties:
            report.bad(f"CommitLog {phys}", f"unit {msg.topic}/{msg.queue_id}@{msg.queue_offset} points at {unit[0]}")


def _check_queues(queues, topics, cl, report, ck, progress_out=None) -> None:
    """Every unit points at a sound entry of its topic (a view's: of its base topic) and queue."""
    cache = {}
    units = 0
    progress = Progress(sum(cq.max_offset - cq.min_offset for cq in queues.values()) * 20, progress_out)
    for (topic, qid), cq in sorted(queues.items()):
        report.count("consume queues")
        if cq.torn:
            report.notes.append(f"ConsumeQueue {topic}/{qid}: torn unit at the tail ({cq.torn} bytes; cut at open)")
        entry = topics.get(topic)
        attrs = (entry.get("attributes") if isinstance(entry, dict) else None) or {}
        want_topic = attrs.get(SOURCE_ATTR) or attrs.get("+" + SOURCE_ATTR) or topic
        for offset, phys, size, _code in cq.units():
            units += 1
            if not units & 0xFFFF:
                progress(units * 20, "ConsumeQueues")
            if phys < cl.begin:
                continue  # retention removed the entry; the queue's min offset moves past it
            if _written_since(phys, cl, ck):
                report.count("units written while verifying")
                continue
            entry, why = _cached_summary(cl, cache, phys, size)
            if entry is None:
                report.bad(f"ConsumeQueue {topic}/{qid}@{offset}", f"points at CommitLog {phys}: {why}")
                continue
            e_topic, e_qid, e_offset, e_count, rewrite = entry
            if e_topic != want_topic or e_qid != qid:
                report.bad(f"ConsumeQueue {topic}/{qid}@{offset}", f"points at an entry of {e_topic}/{e_qid}")
            elif want_topic == topic and not rewrite and not e_offset <= offset < e_offset + e_count:
                report.bad(f"ConsumeQueue {topic}/{qid}@{offset}",
                           f"points at the entry of offsets {e_offset}+{e_count}")
    report.count("consume queue units", units)


def _check_index(data_dir, cl, cache, report, slots: int, ck) -> set:
    """Every IndexFile entry points at a sound entry that has a key of its hash; (hash, phys) of all."""
    directory = os.path.join(data_dir, "index")
    seen: set = set()
    names = sorted(n for n in os.listdir(directory) if len(n) == 17 and n.isdigit()) if os.path.isdir(directory) else []
    for name in names:
        report.count("index files")
        with open(os.path.join(directory, name), "rb") as f:
            head_raw = f.read(INDEX_HEADER)
            if len(head_raw) < INDEX_HEADER:
                report.bad(f"IndexFile {name}", "shorter than its header (recovery rebuilds the index)")
                continue
            head = IndexHeader.parse(head_raw)
            size = os.fstat(f.fileno()).st_size
            if head.index_count < 1:
                report.bad(f"IndexFile {name}", f"index count {head.index_count} in its header")
                continue
            entries_at = _entries_at(size, head.index_count, slots)
            if entries_at is None:
                report.notes.append(f"IndexFile {name}: slot count unknown, entries not checked")
                continue
            f.seek(entries_at)
            raw = f.read(head.index_count * IndexEntry.sizeof())
        for n in range(1, head.index_count):
            h, phys, _diff, prev = ENTRY.unpack_from(raw, n * ENTRY.size)
            report.count("index entries")
            where = f"IndexFile {name}#{n}"
            if prev >= n or prev < 0:
                report.bad(where, f"chain points forward to {prev}")
            if phys < cl.begin:
                continue
            if _written_since(phys, cl, ck):
                report.count("index entries written while verifying")
                continue
            seen.add((h, phys))
            msg, why = _cached_entry(cl, cache, phys)
            if msg is None:
                report.bad(where, f"points at CommitLog {phys}: {why}")
            elif h not in {key_hash(k) for k in M.index_keys(msg.topic, msg.properties, msg.keys)}:
                report.bad(where, f"key hash {h} is none of the keys of the entry at {phys}")
    return seen


def _written_since(phys: int, cl, ck) -> bool:
    """A unit or index entry pointing past the mapped CommitLog and past its checkpoint: a live
    gateway wrote both after the CommitLog was mapped (on a stopped one: damage, the checkpoint
    vouches for what it covers)."""
    return phys >= cl.end and (ck is None or phys >= ck)


def _entries_at(size: int, count: int, slots: int) -> int | None:
    """Where the entries start (the slot count is not in the file: the gateway's --index-slots);
    None when that count does not fit the file's size."""
    at = INDEX_HEADER + 4 * slots
    return at if at <= size and (size - at) % 20 == 0 and at + 20 * count <= size else None


def _entry_against_index(msg, phys, indexed, index_ck, report) -> None:
    if index_ck is None or phys >= index_ck:
        return
    for key in M.index_keys(msg.topic, msg.properties, msg.keys):
        if (key_hash(key), phys) not in indexed:
            report.bad(f"CommitLog {phys}", f"key {key!r} is not in the index")
            return
