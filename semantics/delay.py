"""The delay scheduler: moves due messages from `SCHEDULE_TOPIC_XXXX` to their real topic.

One trio service covers every schedule queue:
- level queues (0..N-1) are FIFO by deliver time, so only the head matters: a cursor per queue;
- the timer queue (N, `__STARTDELIVERTIME`) is not ordered, so its pending units sit in a heap
  keyed by deliver time (read from the ConsumeQueue tagsCode slot, no CommitLog read).
The service sleeps until the earliest due time of all heads, or until a new schedule entry is
dispatched (the scheduler is a store dispatcher), so there is no periodic polling.

Delivery rebuilds the message for REAL_TOPIC/REAL_QID (DELAY and __STARTDELIVERTIME removed,
tags code from TAGS, REAL_TOPIC/REAL_QID kept as RocketMQ does) and appends it: the second write.
The delivered copy carries `SCHEDULE_OFFSET=<queue>:<offset>`, naming the schedule entry it came
from (in a cluster also `SCHEDULE_SOURCE=<node id>`: whose schedule topic). That makes delivery idempotent across a crash:

Progress goes to `config/delayOffset.json`: RocketMQ's `{"offsetTable": {"<level>": next offset}}`
(the timer queue under level N+1: a low mark, every offset below it is delivered), plus `timerLoaded` and
`timerNext` = [deliver ms, offset]: timer entries below `timerLoaded` that sort before `timerNext`
are delivered (the heap delivers in (due, offset) order), and `persistedAt`. It is written when a
burst of deliveries ends and at least every PERSIST_EVERY_MS during one, after the deliveries are
durable (sync flush mode), by the App's off-loop config writer. A crash can only lose the progress of
deliveries made after the last write: at start, the due entries past the persisted progress are
looked up in the tails of their target queues (from `persistedAt` on, a short scan) by their
SCHEDULE_OFFSET marker; found ones count as delivered, so nothing is delivered twice and nothing
is skipped. A round's deliveries are one `append_many` (one write; off the loop on a slow disk: app.flow).

An entry that cannot be delivered (no REAL_TOPIC, unreadable, refused by the store) is logged and
skipped rather than blocking its queue.

In a cluster a due message whose target queue another gateway leads is forwarded there
(`router`, semantics.delay_forward).

Recall (RocketMQ 5.3 RecallMessage): `recall(topic, uniq_key, due_ms)` marks a scheduled message as
cancelled; when its entry falls due it is dropped instead of delivered. The marks are saved with
the progress (`recalled`: [topic, UNIQ_KEY, deliver ms]) at once, and forgotten RECALL_KEEP_MS after
their deliver time.
"""
from __future__ import annotations

import heapq
import logging

import trio

from semantics.clock import WALL_CLOCK
from semantics.delay_forward import FORWARD_RETRY_MS, HERE, LATER, Forward, Forwarder, delivery_key
from semantics.flow_control import append_each, run_in_turn
from semantics.routing import (
    DEFAULT_LEVELS,
    PROPERTY_SCHEDULE_SOURCE,
    SCHEDULE_TOPIC,
    DelayLevels,
    ensure_topic,
    unschedule,
)

log = logging.getLogger("rocketgate.delay")

PROGRESS_FILE = "delayOffset.json"
ROUND_MAX = 512  # deliveries per round (one append_many)
PERSIST_EVERY_MS = 500  # progress write interval during a long burst of deliveries
LOW_MARK_EVERY_MS = 10_000  # the timer queue's low mark (restart scan start) may lag this much
CLOCK_SLACK_MS = 1000  # store timestamps may be this much older than the persist that preceded them
RECALL_KEEP_MS = 600_000  # a recall mark outlives its message's deliver time by this much
UNIQ_KEY = "UNIQ_KEY"


async def _not_waiting(end_offset: int) -> None:
    """`durable` of a scheduler without a flush service (tools, unit tests)."""


class DelayScheduler:
    """State and steps of the scheduler; `run()` is the service, the rest is synchronous.
    `durable(end_offset)` is the App's (sync flush: deliveries are on disk before their progress
    is saved), `writer` its off-loop ConfigWriter (None: progress is written in place)."""

    def __init__(self, store, levels: DelayLevels = DEFAULT_LEVELS, clock=WALL_CLOCK,
                 durable=_not_waiting, writer=None, router=None, flow=None, source: str | None = None) -> None:
        self.store = store
        self.source = source  # a cluster member's node id, named on every copy (SCHEDULE_SOURCE)
        self.router = router  # where due messages go in a cluster (semantics.delay_forward); None: all here
        self._fwd = Forwarder(clock)  # due messages for queues led elsewhere
        self.levels = levels
        self.clock = clock
        self._durable = durable
        self._save = store.write_config if writer is None else writer.submit
        ensure_topic(store, SCHEDULE_TOPIC, levels.queue_count)
        doc = store.read_config(PROGRESS_FILE, {}) or {}
        table = {int(k): int(v) for k, v in (doc.get("offsetTable") or {}).items()}
        # cursor[q]: every entry below it is delivered (RocketMQ's per-level offset; key = q + 1).
        self.cursor = [table.get(q + 1, 0) for q in range(levels.queue_count)]
        self.persisted_at = int(doc.get("persistedAt") or 0)
        t = levels.timer_queue
        self._loaded = self.cursor[t]  # timer units below this have been pushed onto the heap
        self._persisted_loaded = max(int(doc.get("timerLoaded") or 0), self._loaded)
        nxt = doc.get("timerNext")
        self._persisted_next = tuple(nxt) if nxt else None
        self._heap: list[tuple[int, int, int]] = []  # (deliver ms, offset, CommitLog offset) pending
        self._skip: set[int] = set()  # timer offsets known delivered that may still be in the heap
        self._stranded: dict[int, tuple[int, int]] = {}  # level -> (head offset, capped due): _head
        self._last_end = 0  # CommitLog end offset of the latest delivery
        self.flow, self._pending = flow, []  # app.flow; deliveries run() appends off the loop
        self._dirty = False
        self._low_mark_at = 0  # when the timer queue's low mark was last computed
        self._wake: trio.Event | None = None
        self._token = None
        self.delivered = 0  # counter, for tests and stats
        # (REAL_TOPIC, UNIQ_KEY) -> deliver ms of the recalled messages (dropped when due)
        self.recalled: dict[tuple[str, str], int] = {(t, k): int(due) for t, k, due in doc.get("recalled") or []}
        for q in range(levels.queue_count):
            self._skip_expired(q)

    # ---- reading the schedule queues -------------------------------------------------------------

    def _skip_expired(self, q: int) -> None:
        """Keep the cursor inside the queue: past expired entries (retention), and back to the end
        if the queue is shorter than the progress says (its tail was lost with the CommitLog's)."""
        low, high = self.store.min_offset(SCHEDULE_TOPIC, q), self.store.max_offset(SCHEDULE_TOPIC, q)
        if self.cursor[q] < low:
            log.warning("schedule queue %d: entries %d..%d expired before delivery", q, self.cursor[q], low)
            self.cursor[q] = low
        elif self.cursor[q] > high:
            log.warning("schedule queue %d ends at %d, before its progress %d", q, high, self.cursor[q])
            self.cursor[q] = high
        if q == self.levels.timer_queue:
            self._loaded = min(max(self._loaded, self.cursor[q]), high)
            self._persisted_loaded = min(self._persisted_loaded, high)

    def _load_timers(self) -> None:
        """Push timer-queue units appended since the last call onto the heap."""
        q = self.levels.timer_queue
        top = self.store.max_offset(SCHEDULE_TOPIC, q)
        old, nxt = self._persisted_loaded, self._persisted_next
        while self._loaded < top:
            units = self.store.units(SCHEDULE_TOPIC, q, self._loaded, min(4096, top - self._loaded))
            if not units:
                break
            for i, (phys, _size, due) in enumerate(units):
                off = self._loaded + i
                if off < old and (nxt is None or (due, off) < nxt):
                    continue  # delivered before the last persist
                heapq.heappush(self._heap, (due, off, phys))
            self._loaded += len(units)

    def _timer_top(self) -> tuple[int, int, int] | None:
        heap, skip = self._heap, self._skip
        while heap and heap[0][1] in skip:
            skip.discard(heapq.heappop(heap)[1])
        return heap[0] if heap else None

    def _head(self, q: int, off: int) -> tuple[int, int] | None:
        """(deliver time, CommitLog offset) of a level queue's entry at `off`, None past its end."""
        if off >= self.store.max_offset(SCHEDULE_TOPIC, q):
            return None
        units = self.store.units(SCHEDULE_TOPIC, q, off, 1)
        if not units:
            return None
        phys, _size, due = units[0]
        # A clock stepped back (or store timestamps held at a peak after a jump: store/commitlog.py) must not
        # strand it: due at born time + delay, at most that from when first found (seed 2602, docs/faults.md).
        now, delay = self.clock.now_ms(), self.levels.delay_ms(q + 1)
        if due > now + delay:
            held = self._stranded.get(q)
            if held is None or held[0] != off:
                entry = self.store.get(phys)
                held = self._stranded[q] = (off, min(now if entry is None else entry.born_timestamp, now) + delay)
            due = held[1]
        return due, phys

    # ---- delivering ----------------------------------------------------------------------------

    real_copy = staticmethod(unschedule)

    def _take(self, q: int, off: int, phys: int):
        """(units the entry at `off` spans, the copy to deliver or None when it is dropped)."""
        entry = self.store.get(phys)
        if entry is None:
            log.warning("schedule queue %d offset %d: entry at %d unreadable, skipped", q, off, phys)
            return 1, None
        msg = self._copy(entry, q)
        if msg is None:
            log.warning("schedule queue %d offset %d: no REAL_TOPIC, dropped", q, off)
        elif (msg.topic, msg.properties.get(UNIQ_KEY)) in self.recalled:
            log.info("schedule queue %d offset %d: recalled, dropped", q, off)
            msg = None
        return entry.batch_count, msg

    def _copy(self, entry, q: int):
        msg = self.real_copy(entry, q)
        if msg is not None and self.source is not None:
            msg.properties[PROPERTY_SCHEDULE_SOURCE] = self.source
        return msg

    def _append(self, msgs: list) -> None:
        if msgs and self.flow is not None and not self.flow.appends_inline(self.store):
            self._pending = msgs  # a slow disk: run() appends them off the event loop (app.flow)
        elif msgs:  # one bad copy must not hold back the others (logged and dropped)
            self._appended(append_each(self.store, msgs))

    def _appended(self, results: list) -> None:
        if results:
            self._last_end = results[-1].end_offset
        self.delivered += len(results)

    def deliver_due(self, now: int) -> tuple[int, int | None]:
        """Deliver what is due at `now` (at most ROUND_MAX): (count, earliest future deliver time).
        Messages for queues led elsewhere are collected for `forward()` (counted here)."""
        out: list = []
        count = 0
        upcoming: int | None = None

        def later(due: int) -> None:
            nonlocal upcoming
            upcoming = due if upcoming is None else min(upcoming, due)

        for q in range(self.levels.max_level):
            self._skip_expired(q)
            off, run = self.cursor[q], None  # run: this level's forward, its cursor moves on the ack
            while count < ROUND_MAX and not (run and run.full()):
                head = self._head(q, off)
                if head is None:
                    break
                due, phys = head
                if due > now:
                    later(due)
                    break
                span, msg = self._take(q, off, phys)
                where = self._fwd.where(self.router, msg, now)
                if where == LATER:
                    later(now + FORWARD_RETRY_MS)
                    break
                if where == HERE:
                    if run:
                        break  # past the forwarded run only once the leader has it
                    if msg is not None:
                        out.append(msg)
                    self.cursor[q] = off + span
                else:
                    if run is None:
                        run = Forward(where, level=q, start=off)
                    elif run.address != where:
                        break
                    run.add(msg, self._fwd.resent(due))
                    run.end = off + span
                off += span
                count += 1
            if run:
                self._fwd.batches.append(run)
        t = self.levels.timer_queue
        self._skip_expired(t)
        self._load_timers()
        parked = []
        while count < ROUND_MAX:
            top = self._timer_top()
            if top is None:
                break
            due, off, phys = top
            if due > now:
                later(due)
                break
            heapq.heappop(self._heap)
            span, msg = self._take(t, off, phys)
            where = self._fwd.where(self.router, msg, now)
            if where == LATER:
                parked.append(top)
                later(now + FORWARD_RETRY_MS)
                continue
            if where == HERE:
                if msg is not None:
                    out.append(msg)
                self._skip.update(range(off + 1, off + span))
            else:
                self._fwd.add_timer(where, top, span, msg)
            count += 1
        for item in parked:
            heapq.heappush(self._heap, item)
        self._append(out)
        if count:
            self._dirty = True
        if count >= ROUND_MAX:
            upcoming = now
        return count, upcoming

    async def forward(self) -> int:
        """Send what deliver_due collected to the queues' leaders: (semantics.delay_forward)."""
        return await self._fwd.send(self.router, self._settle)

    def _settle(self, f: Forward, ok: bool) -> None:
        """A forward was answered: on ok its level run or timer units are delivered; otherwise the
        timer units go back on the heap (a level run was never past the cursor)."""
        if ok and f.level is not None and self.cursor[f.level] == f.start:
            self.cursor[f.level] = f.end
        for item, span in f.timers:
            if ok:
                self._skip.update(range(item[1] + 1, item[1] + span))
            else:
                heapq.heappush(self._heap, item)
        if ok:
            self.delivered += len(f.msgs)
            self._dirty = True

    def snapshot(self) -> dict:
        """The progress document as of now (see the module doc)."""
        t = self.levels.timer_queue
        top = min(filter(None, [self._timer_top(), *self._fwd.in_flight]), default=None)  # in flight: pending
        now = self.clock.now_ms()
        if now - self._low_mark_at >= LOW_MARK_EVERY_MS:  # an O(pending) scan: not on every write
            self._low_mark_at = now
            pending = [off for _due, off, _phys in self._heap if off not in self._skip]
            pending += [off for _due, off, _phys in self._fwd.in_flight]
            self.cursor[t] = min(pending) if pending else self._loaded
        self.persisted_at = now
        self._dirty = False
        return {
            "offsetTable": {str(q + 1): off for q, off in enumerate(self.cursor)},
            "timerLoaded": self._loaded,
            "timerNext": list(top[:2]) if top else None,
            "persistedAt": self.persisted_at,
            "recalled": [[t, k, due] for (t, k), due in self.recalled.items()],
        }

    def pending(self) -> list[tuple[int, int, int | None]]:
        """(schedule queue, messages not delivered yet, earliest deliver ms or None) per queue, read
        from the cursors and timer heap delivery itself moves: a delivered message leaves at once."""
        out = []
        for q in range(self.levels.max_level):
            cursor, end = self.cursor[q], self.store.max_offset(SCHEDULE_TOPIC, q)
            head = self.store.units(SCHEDULE_TOPIC, q, cursor, 1) if cursor < end else []
            out.append((q, max(0, end - cursor), head[0][2] if head else None))
        self._load_timers()
        waiting = [item for item in self._heap if item[1] not in self._skip] + list(self._fwd.in_flight)
        out.append((self.levels.timer_queue, len(waiting), min(waiting)[0] if waiting else None))
        return out

    def persist(self) -> None:
        self._save(PROGRESS_FILE, self.snapshot())

    def recall(self, topic: str, uniq_key: str, due_ms: int) -> None:
        """Cancel the scheduled message of `topic` with this UNIQ_KEY: it is dropped when due. A
        mark that names no scheduled message cancels nothing (as RocketMQ's broker accepts it)."""
        now = self.clock.now_ms()
        self.recalled = {key: due for key, due in self.recalled.items() if due + RECALL_KEEP_MS > now}
        self.recalled[(topic, uniq_key)] = due_ms
        self.persist()

    # ---- recovery ------------------------------------------------------------------------------

    def recover(self, now: int) -> int:
        """Count as delivered the due entries whose copy is already in their target queue
        (delivered before a crash, progress not yet persisted). Returns how many were found."""
        found = 0
        markers: dict[tuple[str, int], set[tuple]] = {}
        self._fwd.started_ms = now  # forwards of what was due by now may repeat an earlier one

        def already_delivered(q: int, phys: int) -> tuple[bool, int]:
            entry = self.store.get(phys)
            if entry is None:
                return False, 1
            copy = self._copy(entry, q)
            if copy is None:
                return False, entry.batch_count
            key = (copy.topic, copy.queue_id)
            if key not in markers:
                markers[key] = self._markers_since(copy.topic, copy.queue_id, self.persisted_at - CLOCK_SLACK_MS)
            return delivery_key(copy) in markers[key], entry.batch_count

        for q in range(self.levels.max_level):
            self._skip_expired(q)
            while True:
                units = self.store.units(SCHEDULE_TOPIC, q, self.cursor[q], 1)
                if not units or units[0][2] > now:
                    break
                done, span = already_delivered(q, units[0][0])
                if not done:
                    break  # deliveries of a level queue go in offset order: the rest were not made
                self.cursor[q] += span
                found += 1
        t = self.levels.timer_queue
        self._skip_expired(t)
        self._load_timers()
        for _due, off, phys in sorted(item for item in self._heap if item[0] <= now):
            if off in self._skip:
                continue
            done, span = already_delivered(t, phys)
            if done:
                self._skip.update(range(off, off + span))
                found += 1
        if found:
            log.info("delay scheduler: %d deliveries made before the last stop were recognised", found)
        return found

    def _markers_since(self, topic: str, qid: int, since_ms: int) -> set[tuple]:
        s = self.store
        out: set[tuple] = set()
        off = s.offset_for_timestamp(topic, qid, max(0, since_ms))
        end = s.max_offset(topic, qid)
        while off < end:
            res = s.read(topic, qid, off, 256)
            for _qoff, m in res.entries:
                out.add(delivery_key(m))
            if res.next_offset <= off:
                break
            off = res.next_offset
        return out

    # ---- the service ---------------------------------------------------------------------------

    def dispatch(self, requests) -> None:
        """Store dispatcher: a new schedule entry may be due before the current sleep ends."""
        if self._token is None or not any(r.topic == SCHEDULE_TOPIC for r in requests):
            return
        try:
            self._token.run_sync_soon(self._set_wake)
        except Exception:  # trio already finished: nothing to wake
            pass

    def _set_wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The service: ready once the deliveries made before the last stop are recognised."""
        clock = self.clock
        self._token = trio.lowlevel.current_trio_token()
        self._wake = trio.Event()
        self.store.add_dispatcher(self)
        self.recover(clock.now_ms())
        self.persist()
        task_status.started()
        try:
            while True:
                self._wake = trio.Event()
                count, upcoming = self.deliver_due(clock.now_ms())
                if self._pending:  # in the flow's turn, before the progress is saved
                    self._appended(await run_in_turn(self.flow, self.store, append_each, self.store, self._pending))
                    self._pending = []
                if count:
                    await self._durable(self._last_end)
                if self._fwd.batches:
                    await self.forward()
                if self._dirty and (count == 0 or clock.now_ms() - self.persisted_at >= PERSIST_EVERY_MS):
                    self.persist()
                if count:
                    await trio.sleep(0)
                    continue
                wait = float("inf") if upcoming is None else (upcoming - clock.now_ms()) / 1000
                if wait > 0:
                    with trio.move_on_after(wait):
                        await self._wake.wait()
        finally:
            self._token = None
