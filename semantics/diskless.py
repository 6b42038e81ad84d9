"""The diskless write path (docs/diskless.md): produces to diskless queues join one WAL buffer; a system
task opened with the buffer closes it when it reaches `max_bytes` or after `max_ms`, PUTs it as one
object holding every queue's batches, commits each queue's index entry, and only then are the produces
answered with their offsets. Joining is synchronous (`enqueue`), so a connection may read its next
request once its produces joined (their order is the join order). Every object-store call runs in a
worker thread; flushes run one at a time, in order."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import logging
import time

import trio

from store.diskless import layout
from store.diskless.index import DisklessIndex
from store.objstore.api import ObjectStoreError

ATTRIBUTE = "diskless.enable"
log = logging.getLogger("rocketgate")
COMMIT_THREADS = 8  # index entries of one WAL object written at once


def is_diskless(cfg) -> bool:
    return cfg is not None and str((cfg.attributes or {}).get(ATTRIBUTE, "false")).lower() == "true"


@dataclasses.dataclass
class _Slot:
    topic: str
    queue: int
    run: bytes  # one produce's batches for one queue
    count: int  # offsets they take
    max_ts: int
    producers: tuple  # (producer id, epoch, first sequence, count, offset delta in `run`)
    applied: tuple = ()  # committed transactional batches it appends: (producer id, epoch, first sequence)
    done: trio.Event = dataclasses.field(default_factory=trio.Event)
    base: int = -1
    error: Exception | None = None
    after: "_Slot | None" = None  # an earlier slot this one must not outlive (an idempotent predecessor)
    on_done: object = None  # fn(slot), called in join order once the slot's flush ended


@dataclasses.dataclass
class WalStats:
    objects: int = 0
    bytes: int = 0
    index_writes: int = 0
    failures: int = 0


class DisklessWriter:
    """Buffers produces into WAL objects; `append` returns the base offset once the object and the
    queue's index entry are durable in the store. Raises ObjectStoreError otherwise (nothing acked)."""

    def __init__(self, index: DisklessIndex, max_bytes: int = 4 << 20, max_ms: int = 250) -> None:
        self.index = index
        self.max_bytes = max_bytes
        self.max_ms = max_ms
        self.stats = WalStats()
        self._pending: list[_Slot] = []
        self._pending_bytes = 0
        self._full = trio.Event()
        self._flush_lock = trio.Lock()  # FIFO: WAL objects are committed in the order they closed
        self._commits = concurrent.futures.ThreadPoolExecutor(COMMIT_THREADS, thread_name_prefix="diskless-index")

    async def append(self, topic: str, queue: int, run: bytes, count: int, max_ts: int = -1,
                     producers: tuple = ()) -> int:
        return await self.result(self.enqueue(topic, queue, run, count, max_ts, producers))

    def enqueue(self, topic: str, queue: int, run: bytes, count: int, max_ts: int = -1, producers: tuple = (),
                after: _Slot | None = None, on_done=None, applied: tuple = ()) -> _Slot:
        """Join the open WAL buffer (no await: the caller's later produces come after this one).
        `applied`: the committed transactional batches `run` appends (never appended twice: index.py)."""
        slot = _Slot(topic, queue, run, count, max_ts, producers, applied, after=after, on_done=on_done)
        self._pending.append(slot)
        self._pending_bytes += len(run)
        if self._pending_bytes >= self.max_bytes:
            self._full.set()
        if len(self._pending) == 1:  # a new buffer: its closer runs on its own, whatever the caller does
            trio.lowlevel.spawn_system_task(self._close_buffer)
        return slot

    @staticmethod
    async def result(slot: _Slot) -> int:
        """The slot's base offset once durable; ObjectStoreError when its WAL object or entry failed."""
        await slot.done.wait()
        if slot.error is not None:
            raise slot.error
        return slot.base

    async def _close_buffer(self) -> None:
        with trio.move_on_after(self.max_ms / 1000):
            await self._full.wait()
        slots, self._pending, self._pending_bytes = self._pending, [], 0
        self._full = trio.Event()
        async with self._flush_lock:
            await self._flush(slots)

    async def _flush(self, slots: list[_Slot]) -> None:
        for slot in slots:  # a predecessor's failed write fails this one too (no sequence gap)
            if slot.after is not None and slot.after.error is not None:
                slot.error = slot.after.error
        try:
            await trio.to_thread.run_sync(self._write, [s for s in slots if s.error is None])
        except ObjectStoreError as exc:
            self.stats.failures += 1
            for slot in slots:
                if slot.base < 0:
                    slot.error = exc
        except Exception as exc:  # a bug must not leave produces waiting forever
            for slot in slots:
                if slot.base < 0:
                    slot.error = ObjectStoreError(f"diskless write failed: {exc!r}")
        for slot in slots:
            if slot.on_done is not None:
                try:
                    slot.on_done(slot)
                except Exception:  # a bug there must not leave the other produces waiting
                    log.exception("diskless: a produce's completion failed")
            slot.done.set()

    def _write(self, slots: list[_Slot]) -> None:
        """(worker thread) One WAL object, grouped by queue, then one index entry per queue."""
        if not slots:
            return
        ordered = sorted(slots, key=lambda s: (s.topic, s.queue))  # stable: a queue's produces keep order
        body = b"".join(s.run for s in ordered)
        key = layout.wal_key(int(time.time() * 1000))
        self.index.store.put(key, body, if_absent=True)
        put_at = time.monotonic()
        self.stats.objects += 1
        self.stats.bytes += len(body)
        groups, pos = [], 0
        for queue_key, group in itertools.groupby(ordered, key=lambda s: (s.topic, s.queue)):
            group = list(group)
            groups.append((queue_key, group, pos))
            pos += sum(len(s.run) for s in group)
        # the queues' entries are independent objects: written at once, not one round trip after another
        failures = [exc for exc in self._commits.map(lambda g: self._commit(key, put_at, *g), groups) if exc is not None]
        if failures:
            raise failures[0]

    def _commit(self, wal: str, put_at: float, queue_key: tuple, group: list[_Slot],
                pos: int) -> ObjectStoreError | None:
        """(worker thread) One queue's index entry for its slots at `pos` of `wal`; the error, if any.
        Not after `layout.COMMIT_DEADLINE_S` (a paused writer): the object may be collected by then."""
        if time.monotonic() - put_at > layout.COMMIT_DEADLINE_S:
            return ObjectStoreError(f"{wal}: index entry not written within {layout.COMMIT_DEADLINE_S:.0f} s of the PUT")
        run = b"".join(s.run for s in group)
        producers, delta = [], 0
        for s in group:
            producers += [(*p[:4], p[4] + delta) for p in s.producers]
            delta += s.count
        try:
            entry = self.index.commit(*queue_key, wal, pos, run, delta, max(s.max_ts for s in group),
                                      tuple(producers), tuple(a for s in group for a in s.applied))
        except ObjectStoreError as exc:
            return exc
        self.stats.index_writes += 1
        base = entry.base
        for s in group:
            s.base = base
            base += s.count
        return None
