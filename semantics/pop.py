"""One pop engine for RocketMQ 5 POP consumption and Kafka share groups (`semantics.share_partitions`).

A consumer acquires records of a queue without owning it; each record is leased to it until a deadline
(RocketMQ's invisible time, Kafka's lock duration). `ack` finishes a record, `release` makes it available
again now, `reject` finishes it through a dead-letter sink (RocketMQ: `%DLQ%<group>`; Kafka archives),
`renew` moves its deadline. A record whose lease runs out is delivered again (in place: same topic, queue
and offset) with its delivery count raised; after `max_deliveries` deliveries it is rejected instead.

Receipts name (group, topic, queue, offset, pop time): the pop time is unique per delivery, so a receipt
of an earlier delivery, of another group or of a finished record names nothing and changes nothing. The
group's first unfinished offset is its committed offset in the one offset table, so offset tools show POP
progress. State is logged (`semantics.pop_log`) before it changes; after kill -9 only records in flight
at the crash can be delivered twice. Readers stop at an open Kafka transaction (docs/mapping.md).
"""
from __future__ import annotations

import heapq
from contextlib import nullcontext
from typing import Callable

import trio

from interop.inner_batch import is_gap, present_offsets
from interop.txn_visibility import VISIBLE, queue_stable_end
from semantics.clock import WALL_CLOCK
from semantics.pop_log import PopLog, offset_ranges
from semantics import pop_inflight
from semantics.pop_raw import KEEP_ALL, raw_entry, raw_properties, span
from semantics.pop_state import QueueState
from semantics.pop_types import Acquired, Delivery, Receipt  # noqa: F401  (the engine's API)
from semantics.pop_writes import PopLogWrites

INIT_MIN, INIT_MAX = 0, 1  # RocketMQ ConsumeInitMode: start at the first or at the next message
DEFAULT_MAX_WINDOW = 10_000  # offsets between a queue's first unfinished and next new record
DEFAULT_MAX_DELIVERIES = 17  # RocketMQ: first delivery + 16 reconsumes, then the DLQ
SNAPSHOT_EVERY = 10_000  # ops between snapshots (bounds the replay at start)
SNAPSHOT_AFTER_MS = 600_000  # and at most this long after an op (well before retention drops log files)


class PopEngine:
    def __init__(self, store, offsets=None, *, notify: Callable[[str, int], None] | None = None,
                 max_window: int = DEFAULT_MAX_WINDOW, clock: Callable[[], int] = WALL_CLOCK.now_ms,
                 writer=None) -> None:
        self.store, self.offsets, self.notify = store, offsets, notify
        self.max_window, self.clock = max_window, clock
        self._log = PopLog(store, writer)
        self._states = self._log.load()
        self.writes = PopLogWrites(self._log)  # every op is logged through it, in order (deferred while the disk is slow)
        self._last_pop_time = max((lease.pop_time for s in self._states.values() for lease in s.leases.values()),
                                  default=0)
        self._ops_since_snapshot = 0
        self._unsnapped_since: int | None = None  # time of the first op not in the snapshot
        self._timers: list[tuple[int, str, int]] = []  # (deadline, topic, queue id), stale ones allowed
        self._wake = trio.Event()
        self._pending_acks: dict[tuple, dict[int, int]] = {}  # offset: pop time, acks of this turn (ack_together)
        self._ack_turn: list | None = None  # [logged event, log end offset] of the turn being gathered
        for (_, topic, qid), state in self._states.items():
            deadline = state.next_deadline(0)
            if deadline:
                self._timers.append((deadline, topic, qid))
        heapq.heapify(self._timers)

    # ---- acquiring ------------------------------------------------------------------------
    def acquire(self, group: str, topic: str, qid: int, max_n: int, invisible_ms: int, *,
                tag_filter: Callable[[int], bool] | None = None, keep: Callable[[object, int], bool] | None = None,
                init_mode: int = INIT_MIN, max_deliveries: int = DEFAULT_MAX_DELIVERIES,
                dead_letter: Callable[[str, object, int], int | None] | None = None,
                pop_time: int | None = None, messages: bool = True, whole_batches: bool = False,
                raw: bool = False, raw_keep: Callable[[dict], bool] | None = None) -> Acquired:
        """Lease up to `max_n` records: those available again first (lowest offsets), then new ones.
        `tag_filter(tags_code)` / `keep(message, offset)` skip new records for good (as a pull does); a record
        already delivered `max_deliveries` times goes to `dead_letter(group, message, offset)` (returns a
        CommitLog end offset or None) and is finished. One pop over several queues passes one `new_pop_time()`
        to each call (a receipt names queue, offset and pop time). `messages=False` leaves `Delivery.message`
        None and decodes nothing (Kafka sends the stored batches itself); `whole_batches` leases new records on
        to the end of the stored batch that holds the last one, past `max_n` (Kafka's batch-optimized acquire).
        `raw=True` (without `keep`, or with `raw_keep(properties)`, the exact check on a plain record's
        properties) hands a new plain record over as its stored bytes (`Delivery.raw`), not decoded."""
        now = self.clock()
        state = self._state(group, topic, qid, init_mode)
        if pop_time is None:
            pop_time = self.new_pop_time()
        result = Acquired(pop_time, now + invisible_ms)
        again, dead = [], []
        for offset in state.available(now):
            if len(again) >= max_n:
                break
            (dead if state.leases[offset].count >= max_deliveries else again).append(offset)
        if dead:
            result.end_offset = self._dead_letter(state, group, topic, qid, dead, dead_letter)
        lowest = self.store.min_offset(topic, qid)
        for offset in again:
            message = self._message(topic, qid, offset) if messages else None
            if offset < lowest or (messages and message is None):  # gone with retention
                continue
            result.deliveries.append(Delivery(offset, message, state.leases[offset].count + 1))
        raw_keep = (raw_keep or KEEP_ALL) if raw and (keep is None or raw_keep is not None) else None
        skipped, new_next = self._read_new(state, topic, qid, max_n - len(result.deliveries), result,
                                           tag_filter, keep, messages, whole_batches, raw_keep)
        leased = offset_ranges(sorted(d.offset for d in result.deliveries))
        if leased or skipped or new_next != state.next:
            op = {"k": "pop", "r": leased, "s": offset_ranges(skipped), "n": new_next, "d": result.deadline, "p": pop_time}
            result.end_offset = self._do(group, topic, qid, state, op)
            if leased:
                self._arm(result.deadline, topic, qid)
        result.deliveries.sort(key=lambda d: d.offset)
        result.rest = max(0, self.store.max_offset(topic, qid) - state.next) + len(state.available(now))
        return result

    def new_pop_time(self) -> int:
        """Now in epoch ms, but strictly above any pop time given before (also before a restart)."""
        self._last_pop_time = max(self.clock(), self._last_pop_time + 1)
        return self._last_pop_time

    def _read_new(self, state, topic, qid, want, result, tag_filter, keep, messages, whole,
                  raw_keep) -> tuple[list[int], int]:
        """Lease new records from `state.next` on, walking the queue's units (an entry is decoded
        only when its message is wanted; with `raw_keep` a plain one is not); returns (offsets
        skipped, new next)."""
        skipped, position = [], state.next
        limit = min(state.start + self.max_window, queue_stable_end(self.store, topic, qid))
        decode = messages or keep is not None
        entry, message, present = -1, None, None  # the entry last decoded: position, message, offsets with records
        while want > 0 and position < limit:
            units = self.store.units(topic, qid, position, min(limit - position, max(want, 32)))
            if not units:
                break
            begin = self.store.min_physical_offset
            block, block_at = span(self.store, units) if raw_keep is not None else (b"", 0)
            for phys, size, code in units:
                if size <= 0 or phys < begin or (tag_filter is not None and not tag_filter(code)):
                    skipped.append(position)
                    position += 1
                    continue
                if want == 0:
                    return skipped, position
                data = raw_entry(self.store, phys, size, block, block_at) if raw_keep is not None else None
                if data is not None and (raw_keep is KEEP_ALL or (props := raw_properties(data)) is not None):
                    if raw_keep is KEEP_ALL or raw_keep(props):
                        result.deliveries.append(Delivery(position, None, 1, data))
                        want -= 1
                    else:
                        skipped.append(position)
                    position += 1
                    continue
                look = decode or VISIBLE.may_be_aborted(topic, qid, position)  # an aborted Kafka record is none
                if look and phys != entry:
                    entry, message = phys, self.store.get(phys)
                    present = None if message is None else present_offsets(message)
                if look and (message is None or is_gap(message, present, position) or (keep is not None and not keep(message, position))):
                    skipped.append(position)
                else:
                    result.deliveries.append(Delivery(position, message if messages else None, 1))
                    want -= 1
                position += 1
                if want == 0 and whole:
                    return skipped, self._rest_of_batch(topic, qid, phys, position, limit, result, keep,
                                                        message if entry == phys else None, messages, skipped)
        return skipped, position

    def _rest_of_batch(self, topic, qid, phys, position, limit, result, keep, message, messages, skipped) -> int:
        """Lease the offsets from `position` that are in the same stored entry (at `phys`); the new next."""
        end = self.store.entry_end(topic, qid, position - 1, phys, limit)
        present = None if message is None else present_offsets(message)
        for offset in range(position, end):
            if is_gap(message, present, offset) or (keep is not None and (message is None or not keep(message, offset))):
                skipped.append(offset)
            else:
                result.deliveries.append(Delivery(offset, message if messages else None, 1))
        return max(end, position)

    # ---- receipts -------------------------------------------------------------------------
    def ack(self, receipts: list[Receipt]) -> tuple[int, int]:
        """Finish the records the receipts name. Returns (how many were valid, log end offset);
        invalid receipts (unknown, stale, expired, finished, other group) change nothing."""
        return self._settle_valid(receipts, "ack")

    def gather_acks(self, receipts: list[Receipt], pending: dict) -> int:
        """Note the valid receipts in `pending` ({(group, topic, qid): {offset: pop time}}) without
        logging anything; returns how many were valid and not yet in `pending`. `commit_acks(pending)`
        then logs them as one op per queue (one CommitLog append for the acks of a whole socket read)."""
        done, now = 0, self.clock()
        for r in receipts:
            lease, offsets = self.lease(r), pending.setdefault((r.group, r.topic, r.queue_id), {})
            if lease is not None and lease.deadline > now and r.offset not in offsets:
                offsets[r.offset] = r.pop_time
                done += 1
        return done

    def commit_acks(self, pending: dict) -> int:
        """Acknowledge what `gather_acks` noted whose lease is still the one noted; the log end offset."""
        end = 0
        for (group, topic, qid), offsets in pending.items():
            state = self._states.get((group, topic, qid))
            still = [o for o, p in offsets.items() if state is not None and state.lease_for(o, p)]
            if still:
                end = max(end, self.settle(group, topic, qid, sorted(still), "ack"))
        return end

    async def ack_together(self, receipts: list[Receipt], flow=None) -> tuple[int, int]:
        """`ack` for concurrent callers: the acks gathered in one scheduling turn are logged as one op
        per queue; returns (valid count, log end offset) once that op is logged (with `flow`: made in
        `writes.deferred(flow)`, so it may still be queued: 0, see `writes.written`)."""
        done = self.gather_acks(receipts, self._pending_acks)
        turn = self._ack_turn
        if turn is None:
            turn = self._ack_turn = [trio.Event(), 0]
            with trio.CancelScope(shield=True):  # the others wait for this task's commit
                await trio.lowlevel.cancel_shielded_checkpoint()
            gathered, self._ack_turn, self._pending_acks = self._pending_acks, None, {}
            try:
                with self.writes.deferred(flow) if flow is not None else nullcontext():
                    turn[1] = self.commit_acks(gathered)
            finally:
                turn[0].set()
        else:
            await turn[0].wait()
        return done, turn[1]

    def reject(self, receipts: list[Receipt], dead_letter=None) -> tuple[int, int]:
        """Finish through the dead-letter sink (never delivered again)."""
        return self._settle_valid(receipts, "reject", dead_letter)

    def release(self, receipts: list[Receipt]) -> tuple[int, int]:
        """Make the records available again now (the delivery still counts)."""
        return self._settle_valid(receipts, "release")

    def settle(self, group: str, topic: str, qid: int, offsets: list[int], how: str, dead_letter=None) -> int:
        """`ack`, `reject` or `release` leased offsets the caller has checked (Kafka acknowledges by
        offset): one logged op for them all, whatever their number. Returns the log end offset."""
        state = self._states[(group, topic, qid)]
        if how == "reject":
            return self._dead_letter(state, group, topic, qid, offsets, dead_letter)
        end = self._do(group, topic, qid, state, {"k": "rel" if how == "release" else "ack",
                                                   "r": offset_ranges(sorted(offsets))})
        if how == "release" and self.notify is not None:
            self.notify(topic, qid)
        return end

    def renew(self, receipt: Receipt, invisible_ms: int) -> tuple[int, int] | None:
        """Change the invisible time: the record stays leased until now + invisible_ms. Returns
        (new deadline, log end offset), or None for an invalid receipt."""
        if not self._valid([receipt]):
            return None
        key = (receipt.group, receipt.topic, receipt.queue_id)
        deadline = self.clock() + invisible_ms
        end = self._do(*key, self._states[key], {"k": "chg", "o": receipt.offset, "d": deadline})
        self._arm(deadline, receipt.topic, receipt.queue_id)
        return deadline, end

    def lease(self, receipt: Receipt):
        state = self._states.get((receipt.group, receipt.topic, receipt.queue_id))
        return None if state is None else state.lease_for(receipt.offset, receipt.pop_time)

    def _valid(self, receipts) -> dict[tuple, set[int]]:
        now, out = self.clock(), {}
        for r in receipts:
            lease = self.lease(r)
            if lease is not None and lease.deadline > now:
                out.setdefault((r.group, r.topic, r.queue_id), set()).add(r.offset)
        return out

    def _settle_valid(self, receipts, how, dead_letter=None) -> tuple[int, int]:
        valid, end = self._valid(receipts), 0
        for (group, topic, qid), offsets in valid.items():
            end = self.settle(group, topic, qid, sorted(offsets), how, dead_letter)
        return sum(len(o) for o in valid.values()), end

    def _dead_letter(self, state, group, topic, qid, offsets, dead_letter) -> int:
        end = 0
        if dead_letter is not None:
            for offset in offsets:
                message = self._message(topic, qid, offset)
                if message is not None:
                    end = max(end, dead_letter(group, message, offset) or 0)
        op = {"k": "ack", "r": offset_ranges(sorted(offsets)), "dead": True}
        return max(end, self._do(group, topic, qid, state, op))

    # ---- admin ----------------------------------------------------------------------------
    def reset(self, group: str, topic: str, qid: int, start: int) -> int:
        """Start the group's queue over at `start` (clamped to the queue): every lease is dropped."""
        start = min(max(start, self.store.min_offset(topic, qid)), self.store.max_offset(topic, qid))
        state = self._states.get((group, topic, qid))
        if state is None:
            self.writes.append({"k": "init", "g": group, "t": topic, "q": qid, "s": start})
            state = self._states[(group, topic, qid)] = QueueState(start)
            if self.offsets is not None:
                self.offsets.commit(group, topic, qid, start)
            return self.writes.append({"k": "reset", "g": group, "t": topic, "q": qid, "s": start})
        return self._do(group, topic, qid, state, {"k": "reset", "s": start})

    def drop(self, group: str, topic: str, qid: int) -> int:
        """Forget the group's state of the queue (its next pop starts afresh by its init mode)."""
        if self._states.pop((group, topic, qid), None) is None:
            return 0
        return self.writes.append({"k": "drop", "g": group, "t": topic, "q": qid})

    def use_journal(self, journal) -> None:
        """Cluster mode: replicated queues keep their ops in their pop journals (semantics.replication.pop_journal)."""
        self._log.journal = journal

    def take_over(self, topic: str, qid: int) -> None:
        """This gateway now leads the replicated queue: its groups' states are the journal copy's."""
        for state in self._log.take_over(topic, qid, self._states):
            self._last_pop_time = max([self._last_pop_time, *(lease.pop_time for lease in state.leases.values())])
            if deadline := state.next_deadline(0):
                self._arm(deadline, topic, qid)

    # ---- hand-over (semantics.pop_inflight) ----------------------------------------------
    def export_inflight(self, keep: Callable[[str], bool]) -> list[dict]:
        """The state of every (group, topic, queue) of the topics `keep` accepts, as plain data."""
        return [{"g": g, "t": t, "q": q, **pop_inflight.export_state(state)}
                for (g, t, q), state in sorted(self._states.items()) if keep(t)]

    def import_inflight(self, exported: list[dict], keep: Callable[[str], bool], now_ms: int) -> int:
        """Merge another engine's `export_inflight` (topics `keep` accepts) through logged ops, so a
        restart keeps it. How many leases still invisible it took."""
        adopted = 0
        for s in exported:
            group, topic, qid = s["g"], s["t"], int(s["q"])
            if keep(topic):
                state = self._state(group, topic, qid, INIT_MIN)
                ops, n = pop_inflight.merge_ops(state, s, now_ms)
                adopted += n
                for op in ops:
                    self._do(group, topic, qid, state, op)
                    if op.get("d"):
                        self._arm(op["d"], topic, qid)
                    self._last_pop_time = max(self._last_pop_time, op.get("p", 0))  # no later receipt collides
        return adopted

    # ---- views (read only: the console's and the admin commands') -------------------------
    def groups(self) -> set[str]:
        """Every group with POP state on some queue (live consumer or not)."""
        return {g for g, _topic, _qid in self._states}

    def queues(self, group: str) -> list[tuple[str, int]]:
        """(topic, queue id) of every queue the group has state on."""
        return sorted((t, q) for g, t, q in self._states if g == group)

    def state(self, group: str, topic: str, qid: int) -> QueueState | None:
        return self._states.get((group, topic, qid))

    def start_offset(self, group: str, topic: str, qid: int) -> int:
        """The group's first unfinished offset; for a queue it never popped, where a pop would start
        (committed offset, else the queue's start). Changes nothing."""
        state = self._states.get((group, topic, qid))
        if state is not None:
            return state.start
        committed = self.offsets.fetch(group, topic, qid) if self.offsets is not None else None
        return max(committed or 0, self.store.min_offset(topic, qid))

    def has_available(self, group: str, topic: str, qid: int) -> bool:
        """Whether a pop could lease something now (new records in the window, or records back)."""
        state = self._states.get((group, topic, qid))
        end = queue_stable_end(self.store, topic, qid)  # not past an open Kafka transaction
        if state is None:
            return end > self.start_offset(group, topic, qid)
        return (end > state.next and state.next < state.start + self.max_window) or bool(state.available(self.clock()))

    # ---- internals ------------------------------------------------------------------------
    def _state(self, group, topic, qid, init_mode) -> QueueState:
        key = (group, topic, qid)
        state = self._states.get(key)
        lo = self.store.min_offset(topic, qid)
        if state is None:
            committed = self.offsets.fetch(group, topic, qid) if self.offsets is not None else None
            if committed is not None:
                start = committed
            elif init_mode == INIT_MIN or topic.startswith("%RETRY%"):
                start = lo
            else:
                start = queue_stable_end(self.store, topic, qid)
            start = max(start, lo)
            self.writes.append({"k": "init", "g": group, "t": topic, "q": qid, "s": start})
            state = self._states[key] = QueueState(start)
        elif state.start < lo:
            self._do(group, topic, qid, state, {"k": "move", "s": lo})
        return state

    def _do(self, group, topic, qid, state: QueueState, op: dict) -> int:
        """Log the op, then apply it: the one way state changes."""
        end = self.writes.append({**op, "g": group, "t": topic, "q": qid})
        before = state.start
        state.apply(op)
        if state.start != before and self.offsets is not None:
            self.offsets.commit(group, topic, qid, state.start)
        self._ops_since_snapshot += 1
        if self._unsnapped_since is None:
            self._unsnapped_since = self.clock()
            self._wake.set()  # the timer task schedules the snapshot
        if self._ops_since_snapshot >= SNAPSHOT_EVERY:
            self.snapshot()
        return end

    def snapshot(self) -> bool:
        """Write the state (False: not now, ops are applied but not yet logged; a replay would apply
        them twice on top of it)."""
        if self.writes.pending:
            return False
        self._ops_since_snapshot, self._unsnapped_since = 0, None
        self._log.snapshot(self._states)
        return True

    def checkpoint_journal(self, topic: str, qid: int) -> bool:
        """Checkpoint the queue's pop journal again (semantics.pop_carry); False: ops unlogged."""
        if self.writes.pending or self._log.journal is None:
            return False
        self._log.journal.checkpoint(topic, qid, self._states)
        return True

    def _message(self, topic, qid, offset):
        read = self.store.read(topic, qid, offset, max_count=1)
        for first, message in read.entries:
            if first <= offset < first + max(1, message.batch_count):
                return message
        return None

    # ---- timers ---------------------------------------------------------------------------
    def _arm(self, deadline: int, topic: str, qid: int) -> None:
        earliest = self._timers[0][0] if self._timers else None
        heapq.heappush(self._timers, (deadline, topic, qid))
        if earliest is None or deadline < earliest:
            self._wake.set()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Sleep until the next lease deadline, then wake the queue's waiters (long-polling pops)
        so the record is delivered again; also write the snapshot SNAPSHOT_AFTER_MS after the
        first op it lacks. No polling in between."""
        task_status.started()
        while True:
            self._wake = trio.Event()
            now = self.clock()
            while self._timers and self._timers[0][0] <= now:
                _, topic, qid = heapq.heappop(self._timers)
                if self.notify is not None:
                    self.notify(topic, qid)
            if self._unsnapped_since is not None and now >= self._unsnapped_since + SNAPSHOT_AFTER_MS \
                    and not self.snapshot():  # ops still being logged: again a second later
                self._unsnapped_since = now - SNAPSHOT_AFTER_MS + 1000
            wake_at = [t for t in (self._timers[0][0] if self._timers else None,
                                   None if self._unsnapped_since is None else self._unsnapped_since + SNAPSHOT_AFTER_MS)
                       if t is not None]
            if wake_at:
                with trio.move_on_after(max(0, min(wake_at) - now) / 1000.0):
                    await self._wake.wait()
            else:
                await self._wake.wait()
