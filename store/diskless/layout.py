"""Key names and the encoding of the diskless objects (docs/diskless.md, "Objects").

    diskless/topics/<topic>                 {"partitions": n, "id": id} written if_absent; rewritten by
                                                                         CreatePartitions, deleted by DeleteTopics
    diskless/deleted/<home>                 {"partitions": n}           a deleted incarnation (janitor)
    diskless/wal/<ms>-<uuid>                batches, grouped by queue    written once, if_absent
    diskless/index/<home>/<queue>/<seq>     one IndexEntry (JSON)        written once, if_absent;
                                                                         rewritten in place by compaction
    diskless/segments/<ms>/<home>/<queue>/<uuid>  one queue's batches    compaction, written once
    (<home>: `home(topic, id)`; <ms>: the writer's clock when it named the object, 13 digits, so
    the keys list oldest first and a janitor lists only the newer ones: S3 StartAfter)

A queue's entries are numbered 0, 1, 2 ... with no gap; entry n starts at the offset where n-1 ends,
so the offsets of a queue are decided by who wins the conditional write of its next entry."""
from __future__ import annotations

import dataclasses
import json
import struct
import uuid

from codec.kafka.records import BATCH_LENGTH_AT, LAST_OFFSET_DELTA_AT
from store.objstore.api import ObjectStoreError

TOPICS = "diskless/topics/"
# rewritten (new random content, so a new etag) after every change of a topic record: the topic
# watches HEAD it instead of listing TOPICS (store.diskless.topic_records.changed_mark)
TOPICS_CHANGED = "diskless/topics-changed"
DELETED = "diskless/deleted/"  # tombstones of deleted topics' incarnations: the janitor empties their index
WAL = "diskless/wal/"
INDEX = "diskless/index/"
SEGMENTS = "diskless/segments/"
# an index entry is written at most this long after the object it points to was PUT (else the write
# gives up): garbage collection waits far longer before deleting an object no entry refers to
COMMIT_DEADLINE_S = 60.0
SEQ_DIGITS = 12  # zero-padded: keys list in entry order
TIME_DIGITS = 13  # epoch ms, zero-padded: WAL and segment keys list in naming order (until the year 2286)
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
BATCH_OVERHEAD = 12  # baseOffset + batchLength precede the length-counted part


@dataclasses.dataclass(frozen=True)
class IndexEntry:
    """Offsets [base, base + count) of one queue are the batches at [pos, pos + size) of WAL object `wal`."""
    seq: int
    base: int
    count: int
    wal: str
    pos: int
    size: int
    max_ts: int = -1
    # idempotent producers' batches: [producer id, epoch, first sequence, count, offset - base], so
    # whoever writes the queue next rebuilds their state from the index (docs/diskless.md)
    producers: tuple = ()
    # committed Kafka transactions' batches this entry appends: [producer id, epoch, first sequence],
    # so an end applied twice (retried after a crash, two completers) never appends one again (index.py)
    applied: tuple = ()

    @property
    def end(self) -> int:
        return self.base + self.count

    def encode(self) -> bytes:
        fields = dataclasses.asdict(self)
        if not self.applied:
            del fields["applied"]  # (most entries: no transaction's end)
        return json.dumps(fields, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> "IndexEntry":
        try:
            fields = json.loads(data)
            entry = cls(**{f.name: fields[f.name] for f in dataclasses.fields(cls) if f.name in fields})
            entry = dataclasses.replace(entry, producers=tuple(tuple(p) for p in entry.producers),
                                        applied=tuple(tuple(a) for a in entry.applied))
            if not all(isinstance(v, int) for v in (entry.seq, entry.base, entry.count, entry.pos, entry.size)):
                raise TypeError("offsets must be integers")
            return entry
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ObjectStoreError(f"unreadable diskless index entry: {exc}") from None


def topic_key(topic: str) -> str:
    return TOPICS + topic


def home(topic: str, incarnation: str | None) -> str:
    """The name a topic's index and segments are kept under: `<topic>@<id>` for a topic recorded with
    an incarnation id (a topic deleted and created again gets a new one, so it never sees the old
    entries, nor an old writer's late ones), the bare name for one recorded before ids existed."""
    return f"{topic}@{incarnation}" if incarnation else topic


def index_prefix(topic: str, queue: int) -> str:
    return f"{INDEX}{topic}/{queue}/"


def index_key(topic: str, queue: int, seq: int) -> str:
    return f"{index_prefix(topic, queue)}{seq:0{SEQ_DIGITS}d}"


def wal_key(now_ms: int) -> str:
    return f"{WAL}{now_ms:0{TIME_DIGITS}d}-{uuid.uuid4().hex}"


def segment_key(topic: str, queue: int, now_ms: int) -> str:
    return f"{SEGMENTS}{now_ms:0{TIME_DIGITS}d}/{topic}/{queue}/{uuid.uuid4().hex}"


def named_since(prefix: str, ms: int) -> str:
    """The StartAfter key of `prefix` (WAL or SEGMENTS) under which the objects named at `ms` or later list."""
    return f"{prefix}{max(ms, 0):0{TIME_DIGITS}d}"


def seq_of(key: str) -> int | None:
    tail = key.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else None


def offsets_used(batch: bytes) -> int:
    """How many offsets a Kafka RecordBatch takes: lastOffsetDelta + 1 (a batch may leave gaps)."""
    return _I32.unpack_from(batch, LAST_OFFSET_DELTA_AT)[0] + 1


def with_offsets(run: bytes, base: int) -> bytes:
    """The batches of `run` (one entry's bytes) with their BaseOffset set from `base` on: the offsets
    are the index's, decided after the WAL object was written. BaseOffset is outside the batch CRC."""
    out = bytearray(run)
    at = 0
    while at + BATCH_OVERHEAD <= len(out):
        _I64.pack_into(out, at, base)
        base += _I32.unpack_from(out, at + LAST_OFFSET_DELTA_AT)[0] + 1
        at += BATCH_OVERHEAD + _I32.unpack_from(out, at + BATCH_LENGTH_AT)[0]
    return bytes(out)


def batches_from(run: bytes, base: int, offset: int) -> bytes:
    """The batches of `run` (offsets from `base`) from the one holding `offset` on, offsets set."""
    patched = with_offsets(run, base)
    at = 0
    while at + BATCH_OVERHEAD <= len(patched):
        size = BATCH_OVERHEAD + _I32.unpack_from(patched, at + BATCH_LENGTH_AT)[0]
        last = _I64.unpack_from(patched, at)[0] + _I32.unpack_from(patched, at + LAST_OFFSET_DELTA_AT)[0]
        if last >= offset:
            return patched[at:]
        at += size
    return b""
