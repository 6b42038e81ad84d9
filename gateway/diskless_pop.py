"""POP on diskless queues (docs/diskless.md, "POP on diskless topics"). The POP engine
(semantics.pop) keeps its state as for any queue: leases, receipts and progress in this gateway's
pop log, beside its local CommitLog. Only its reads of a diskless queue differ: before each pop
attempt the messages of the queue from the group's first unfinished offset on are loaded off the
event loop from the index and the WAL objects (`load`, at most LOAD_MAX_BYTES), and the engine reads
them through `PopQueues`, a store that answers for diskless queues from those loads and passes
everything else to the local store. Ack, change of invisible time and redelivery after the
invisible time (in place, as on plain topics) need nothing else."""
from __future__ import annotations

import itertools

import trio

import interop.to_rocketmq as to_rocketmq
from codec.kafka import records
from codec.remoting import ResponseCode
from codec.remoting import message as smsg
from gateway.diskless_pop_owner import PopOwner
from gateway.remoting.diskless import batch_message
from semantics.diskless import is_diskless
from store.objstore.api import ObjectStoreError

LOAD_MAX_BYTES = 1 << 20  # per queue and pop attempt
FIRST_ID = 1 << 62  # ids of loaded messages: above every CommitLog offset (the engine skips ids below its start)


class _Loaded:
    """One diskless queue as last loaded: its offsets [start, end), the messages in [first, top)."""

    __slots__ = ("start", "end", "first", "top", "ids")

    def __init__(self, start: int, end: int, first: int, top: int, ids: dict[int, int]) -> None:
        self.start, self.end, self.first, self.top, self.ids = start, end, first, top, ids


class _Read:
    __slots__ = ("entries", "next_offset")

    def __init__(self, entries, next_offset: int) -> None:
        self.entries, self.next_offset = entries, next_offset


class PopQueues:
    """The POP engine's store: diskless queues from `put` loads, the rest from `store`."""

    def __init__(self, store) -> None:
        self._store = store
        self._queues: dict[tuple[str, int], _Loaded] = {}
        self._messages: dict[int, smsg.StoredMessage] = {}
        self._ids = itertools.count(FIRST_ID)

    def __getattr__(self, name):  # everything not about a loaded queue is the local store's
        return getattr(self._store, name)

    def covers(self, topic: str, qid: int, first: int, start: int, end: int) -> bool:
        """Whether the queue's load still holds every message from `first` on (nothing new, nothing expired)."""
        q = self._queues.get((topic, qid))
        return q is not None and (q.start, q.end, q.top) == (start, end, end) and q.first <= first

    def put(self, topic: str, qid: int, start: int, end: int, first: int, messages: list) -> None:
        """Replace the queue's load: its offsets [start, end) and the messages from `first` on
        (the engine reads no further than them: `units` ends there)."""
        old = self._queues.pop((topic, qid), None)
        for mid in (old.ids.values() if old else ()):
            self._messages.pop(mid, None)
        ids = {}
        for m in messages:
            ids[m.queue_offset] = mid = next(self._ids)
            self._messages[mid] = m
        top = max(ids) + 1 if ids else first
        self._queues[(topic, qid)] = _Loaded(start, end, first, top, ids)

    def loaded(self, topic: str, qid: int) -> bool:
        return (topic, qid) in self._queues

    def min_offset(self, topic: str, qid: int) -> int:
        q = self._queues.get((topic, qid))
        return self._store.min_offset(topic, qid) if q is None else q.start

    def max_offset(self, topic: str, qid: int) -> int:
        q = self._queues.get((topic, qid))
        return self._store.max_offset(topic, qid) if q is None else q.end

    def units(self, topic: str, qid: int, offset: int, count: int):
        q = self._queues.get((topic, qid))
        if q is None:
            return self._store.units(topic, qid, offset, count)
        out = []
        for off in range(offset, min(offset + count, q.top)):
            mid = q.ids.get(off)
            m = self._messages.get(mid) if mid is not None else None
            out.append((mid, 1, smsg.tags_code_of(m.properties)) if m is not None else (0, 0, 0))  # 0: a gap
        return out

    def read_entry(self, phys: int, size: int) -> bytes:
        """No stored bytes for a loaded message: the engine decodes it (`get`) instead."""
        return b"" if phys >= FIRST_ID else self._store.read_entry(phys, size)

    def get(self, phys: int):
        return self._messages.get(phys) if phys >= FIRST_ID else self._store.get(phys)

    def read(self, topic: str, qid: int, offset: int, max_count: int = 32, *args, **kwargs):
        q = self._queues.get((topic, qid))
        if q is None:
            return self._store.read(topic, qid, offset, max_count, *args, **kwargs)
        mid = q.ids.get(offset)
        entries = [(offset, self._messages[mid])] if mid is not None else []
        return _Read(entries, offset + 1)


def install(app) -> None:
    """Let the App's POP engine read diskless queues (at start, when the App has them)."""
    if app.diskless is not None and not isinstance(app.pop.store, PopQueues):
        app.pop.store = PopQueues(app.pop.store)
        app.pop_remoting.owner = PopOwner(app)


def unloaded(app, topic: str, qid: int) -> bool:
    """Whether `topic` is a diskless topic whose queue `qid` no pop here has loaded (a new POP owner
    before its first pop of it): its offsets are not known here, a receipt is looked up as it is."""
    store = app.pop.store
    return isinstance(store, PopQueues) and is_diskless(app.store.topics.get(topic)) and not store.loaded(topic, qid)


def diskless_sources(app, sources: list) -> list:
    return [(t, q) for t, q in sources if app.diskless is not None and is_diskless(app.store.topics.get(t))]


def _bounds(index, topic: str, qid: int) -> tuple[int, int]:
    """(worker thread) The queue's offsets [start, end), after a look for news."""
    end = index.refresh(topic, qid)
    return index.start(topic, qid), end


def _read(app, topic: str, qid: int, offset: int, end: int) -> list:
    """(worker thread) The queue's messages from `offset` on, up to `end` or about LOAD_MAX_BYTES."""
    index, out, size = app.diskless.index, [], 0
    while offset < end and size < LOAD_MAX_BYTES:
        data = index.read(topic, qid, offset, LOAD_MAX_BYTES)
        batches = records.parse_batches(data)
        if not batches:
            break
        for b in batches:
            for i, raw in enumerate(to_rocketmq.expand_slots(batch_message(app, topic, qid, b))):
                if raw is not None and b.base_offset + i >= offset:
                    out.append(smsg.decode(raw))
                    size += len(raw)
            offset = max(offset, b.base_offset + b.last_offset_delta + 1)
    return out


async def load(app, group: str, sources: list) -> None:
    """Load the diskless queues among `sources` for a pop of `group` (raises ObjectStoreError)."""
    for topic, qid in diskless_sources(app, sources):
        state = app.pop.state(group, topic, qid)
        start = state.start if state is not None else app.pop.start_offset(group, topic, qid)
        lo, end = await trio.to_thread.run_sync(_bounds, app.diskless.index, topic, qid)
        first = max(start, lo)
        if app.pop.store.covers(topic, qid, first, lo, end):  # a look that found nothing new decodes nothing
            continue
        messages = await trio.to_thread.run_sync(_read, app, topic, qid, first, end)
        app.pop.store.put(topic, qid, lo, end, first, messages)


def forwarded(channel, req, topics) -> bool:
    """Whether `req` (an ack or a change of invisible time naming `topics`) goes to the bucket's POP
    owner (gateway.diskless_pop_owner): then a task relays its answer, SYSTEM_BUSY if it cannot be
    reached (the requests after that are served here for a while, as the POPs are)."""
    app, owner = channel.app, channel.app.pop_remoting.owner
    if owner is None or owner.remote(req) is None:
        return False
    if not any(isinstance(t, str) and is_diskless(app.store.topics.get(t)) for t in topics):
        return False

    async def relay():
        resp = await owner.forward(req, 0)
        return resp if resp is not None else req.response(
            ResponseCode.SYSTEM_BUSY, remark="[diskless] the bucket's POP owner cannot be reached; retry")
    channel.spawn(req, relay)
    return True


async def pop(app, req, group: str, sources: list, once, poll_s: float, timed_out):
    """A POP_MESSAGE with diskless queues among `sources`: the bucket's POP owner's answer if another
    gateway owns POP; else load them, try `once()` (the pop as on any queue), and while nothing came
    wait up to `poll_s` for news (this gateway's writes wake it, another's are seen at the next look,
    at most a second later); `timed_out()` answers an empty poll."""
    owner = app.pop_remoting.owner
    resp = await owner.forward(req, poll_s) if owner is not None else None
    if resp is not None:
        return resp
    deadline = trio.current_time() + poll_s
    while True:
        try:
            await load(app, group, sources)
        except ObjectStoreError as exc:
            return req.response(ResponseCode.SYSTEM_BUSY, remark=f"[diskless] object store unavailable: {exc}")
        resp = once()
        remaining = deadline - trio.current_time()
        if resp.code == ResponseCode.SUCCESS or remaining <= 0:
            break
        await app.arrivals.wait_any(sources, min(remaining, 1.0))
    if app.pop.writes.pending:
        await app.pop.writes.written()
    return resp if resp.code == ResponseCode.SUCCESS or poll_s <= 0 else timed_out()
