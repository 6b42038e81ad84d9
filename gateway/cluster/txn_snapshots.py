"""Per-queue snapshots of the Kafka transaction state a cluster replica derives from its log
(docs/cluster-txn-layout.md, "Snapshots"), so that a start replays only the entries after each
queue's snapshot instead of the whole log (about 11 µs per entry).

A snapshot is the queue's derived state (open transactions with their first offsets, the aborted
index, the recent ends a truncation needs, each producer's last marker numbers with their offsets that
fence a stale marker; `TxnVisibility.queue_state`) *as of offset O*: what the
entries [log start, O) derived. It is one file per queue, `<store>/txnsnap/<topic>.<queue>.snap`,
written whole to a temporary file, fsynced and renamed over the last one (a `kill -9` leaves the
old one or the new one, never a torn one), framed by a format line with a CRC-32 and the length.

It is trusted only when it provably describes the log as it is now; otherwise it is ignored and the
queue is replayed whole (never trusted wrongly):
- the format line, version, CRC and length match, and it names its queue;
- log start < O <= log end, and the entry at O - 1 is the one it was taken after: its CommitLog
  offset, size and a CRC of its bytes (the *fingerprint*). A cut queue (a follower's truncation,
  `store.replica.truncate_queue`) leaves the cut entries in the CommitLog and appends the ones after
  at new CommitLog offsets, so a log cut below O and grown again has another entry at O - 1; a log
  cut and not grown back ends below O. A truncation also deletes the queue's snapshot at once
  (`Derived.truncate`), and so does a follower restarting its queue at the leader's log start.

A snapshot is taken from the live state, which must then be exactly what the entries below the
log end derived: the follower derives in the same step as it appends; the leader's produce path and
marker writes apply an append's effect with no checkpoint after it, except while they hold or wait
for the flow's worker turn, so a snapshot is only taken while nobody does (`flow.offloaded == 0`).
"""
from __future__ import annotations

import json
import logging
import os
import time
import urllib.parse
import zlib

import trio

from gateway.cluster.ownership import is_local_topic
from interop.txn_visibility import VISIBLE
from store.config import atomic_write

log = logging.getLogger("rocketgate.cluster")

FORMAT = 2  # 2: with each producer's last marker numbers (`marks`); a snapshot of 1 is ignored
MAGIC = b"rocketgate-txn-snapshot"
DIR = "txnsnap"
EVERY_ENTRIES = 50_000  # a queue's snapshot once it grew this many offsets past its last one...
MAX_AGE_S = 60.0  # ...or once its last one is this old and it grew at all (--cluster-txn-snapshot-s)
CHECK_S = 5.0  # how often the queues are looked at (at most)


def encode(topic: str, qid: int, offset: int, fingerprint: list, state: dict) -> bytes:
    body = json.dumps({"topic": topic, "queue": qid, "offset": offset, "fingerprint": fingerprint, **state},
                      separators=(",", ":")).encode()
    return b"%s %d %08x %d\n" % (MAGIC, FORMAT, zlib.crc32(body), len(body)) + body


def decode(data: bytes) -> dict | None:
    """The snapshot document, or None when `data` is not a whole snapshot of this format."""
    head, newline, body = data.partition(b"\n")
    parts = head.split(b" ")
    if not newline or len(parts) != 4 or parts[0] != MAGIC or parts[1] != b"%d" % FORMAT:
        return None
    try:
        crc, length = int(parts[2], 16), int(parts[3])
        if len(body) != length or zlib.crc32(body) != crc:
            return None
        doc = json.loads(body)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def fingerprint(store, topic: str, qid: int, offset: int) -> list | None:
    """[CommitLog offset, size, CRC-32 of the bytes] of the queue's entry at `offset` - 1, None when
    there is none (below the log start, past its end, unreadable)."""
    at = offset - 1
    if not store.min_offset(topic, qid) <= at < store.max_offset(topic, qid):
        return None
    units = store.units(topic, qid, at, 1)
    if not units or units[0][1] <= 0:
        return None
    phys, size, _code = units[0]
    try:
        return [phys, size, zlib.crc32(store.read_entry(phys, size))]
    except Exception:  # noqa: BLE001 - gone with retention, quarantined, a closed file: no fingerprint
        return None


class Snapshots:
    """The snapshot files of one store's replicated queues, and when each was last written."""

    def __init__(self, store, max_age_s: float = MAX_AGE_S) -> None:
        self.store, self.max_age_s = store, max_age_s
        self.dir = os.path.join(store.path, DIR)
        self.taken: dict[tuple[str, int], tuple[int, float]] = {}  # queue -> (offset, monotonic time)

    def path(self, topic: str, qid: int) -> str:
        return os.path.join(self.dir, f"{urllib.parse.quote(topic, safe='')}.{qid}.snap")

    def load(self, topic: str, qid: int) -> int | None:
        """Restore the queue's state from its snapshot if it is valid (see the module's docstring):
        the offset to replay from; None when there is none to trust (the state is left empty)."""
        try:
            with open(self.path(topic, qid), "rb") as f:
                doc = decode(f.read())
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("%s/%d: transaction snapshot unreadable (%s): replaying the whole log", topic, qid, exc)
            return None
        why = self._refusal(topic, qid, doc)
        if why is None:
            try:
                VISIBLE.restore_queue(topic, qid, doc)
            except ValueError as exc:
                why = str(exc)
        if why is not None:
            log.warning("%s/%d: transaction snapshot ignored (%s): replaying the whole log", topic, qid, why)
            return None
        self.taken[(topic, qid)] = (doc["offset"], time.monotonic())
        return doc["offset"]

    def _refusal(self, topic: str, qid: int, doc: dict | None) -> str | None:
        if doc is None:
            return "torn, corrupt or of another format"
        offset = doc.get("offset")
        if doc.get("topic") != topic or doc.get("queue") != qid or not isinstance(offset, int):
            return "of another queue"
        if not self.store.min_offset(topic, qid) < offset <= self.store.max_offset(topic, qid):
            return f"taken at {offset}, outside the log now"
        now = fingerprint(self.store, topic, qid, offset)
        if now is None or doc.get("fingerprint") != now:
            return f"the entry before {offset} is another one now (the log was cut and grew again)"
        return None

    def capture(self, topic: str, qid: int) -> tuple[int, bytes] | None:
        """(offset, file bytes) of the queue's state now; None when the log has no entry to fingerprint.
        Synchronous: the state and the log end are read in one step."""
        offset = self.store.max_offset(topic, qid)
        mark = fingerprint(self.store, topic, qid, offset)
        if mark is None:
            return None
        return offset, encode(topic, qid, offset, mark, VISIBLE.queue_state(topic, qid))

    def write(self, topic: str, qid: int, data: bytes) -> None:
        """Write a snapshot durably: a temporary file, fsync, rename over the last one, fsync the folder."""
        os.makedirs(self.dir, exist_ok=True)
        atomic_write(self.path(topic, qid), data)

    def drop(self, topic: str, qid: int) -> None:
        """The queue's snapshot no longer describes its log (a cut): deleted."""
        self.taken.pop((topic, qid), None)
        try:
            os.unlink(self.path(topic, qid))
        except FileNotFoundError:
            pass

    def drop_topic(self, topic: str) -> None:
        """A deleted topic's snapshots go with it."""
        for key in [k for k in self.taken if k[0] == topic]:
            del self.taken[key]
        prefix = urllib.parse.quote(topic, safe="") + "."
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return
        for name in names:
            if name.startswith(prefix) and name.endswith(".snap") and name[len(prefix):-5].isdigit():
                try:
                    os.unlink(os.path.join(self.dir, name))
                except FileNotFoundError:
                    pass

    def due(self, topic: str, qid: int, now: float) -> bool:
        end = self.store.max_offset(topic, qid)
        offset, at = self.taken.get((topic, qid), (None, 0.0))
        if offset is None:
            return end > self.store.min_offset(topic, qid)
        return end != offset and (abs(end - offset) >= EVERY_ENTRIES or now - at >= self.max_age_s)

    async def take_due(self, flow, now: float) -> int:
        """A snapshot of every replicated queue that is due one (while no append is half-applied, see
        the module's docstring); how many were written."""
        written = 0
        for topic, qid in replicated_queues(self.store):
            if not self.due(topic, qid, now):
                continue
            if getattr(flow, "offloaded", 0):
                break  # an append may be stored and not yet applied: the next round
            VISIBLE.trim(topic, qid, self.store.min_offset(topic, qid))  # as Kafka's .txnindex goes with its segment
            captured = self.capture(topic, qid)
            if captured is None:
                continue
            offset, data = captured
            try:
                await trio.to_thread.run_sync(self.write, topic, qid, data)
            except OSError as exc:
                log.warning("%s/%d: transaction snapshot not written: %s", topic, qid, exc)
                continue
            if self.store.max_offset(topic, qid) < offset:  # cut while it was written: not to be trusted
                self.drop(topic, qid)
                continue
            self.taken[(topic, qid)] = (offset, now)
            written += 1
        return written


def replicated_queues(store) -> list[tuple[str, int]]:
    return sorted(k for k in list(store.consume_queues.queues) if not is_local_topic(k[0]))


class Derived:
    """The replication layer's `derive` hook (`ReplicaManager.derive`): the shared state, whose
    queue snapshots a cut or a restart at the leader's log start deletes first."""

    def __init__(self, visible, snapshots: Snapshots) -> None:
        self.visible, self.snapshots = visible, snapshots

    def appended(self, topic: str, qid: int, offset: int, m) -> None:
        self.visible.appended(topic, qid, offset, m)

    def truncate(self, topic: str, qid: int, offset: int) -> None:
        self.snapshots.drop(topic, qid)
        self.visible.truncate(topic, qid, offset)

    def forget_queue(self, topic: str, qid: int) -> None:
        self.snapshots.drop(topic, qid)
        self.visible.forget_queue(topic, qid)


async def keep(app, snapshots: Snapshots, each_round=None) -> None:
    """Write the due snapshots (a member's background task); `each_round()` too (txn_layout's marks)."""
    while True:
        await trio.sleep(min(CHECK_S, snapshots.max_age_s))
        if each_round is not None:
            each_round()
        try:
            await snapshots.take_due(app.flow, time.monotonic())
        except Exception:  # noqa: BLE001 - a bug here must not end the member: the start replays more
            log.exception("cluster: transaction snapshots failed")
