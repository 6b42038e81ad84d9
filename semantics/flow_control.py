"""Broker-side send flow control (消息流控, producer side), for both protocols.

RocketMQ refuses new sends with SYSTEM_BUSY when
- a CommitLog write has held the store lock longer than `osPageCacheBusyTimeOutMills` (1000 ms):
  remark "[PC_SYNCHRONIZED]broker busy, start flow control for a while";
- a send request has waited in the send queue longer than `waitTimeMillsInSendQueue` (200 ms;
  BrokerFastFailure looks every 10 ms): remark "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control
  for a while, period in queue: Nms, size of queue: N".
The Java producer does not retry SYSTEM_BUSY on another queue (it is not in retryResponseCodes).

Appends run on the event loop while the disk keeps up (the cheapest way), but a store write can
block for seconds on a slow disk (the kernel's dirty-page throttling, a page under writeback), and
on the loop that would hold up every connection, name-server route lookups included. So once a write
took longer than SLOW_WRITE_S (or a flush longer than SLOW_FLUSH_S: the flusher meets a slow disk
first, every half second), the sends of the next SLOW_HOLD_S are appended by `append` on a
worker thread, one at a time (the store's writer lock; the loop only awaits), as RocketMQ's send
threads do, and the two rules apply as RocketMQ applies them:
- while a write has been in progress longer than the limit, new sends are refused (PC_SYNCHRONIZED);
- a send whose turn to be appended came more than the queue limit after its frame was read is
  refused (TIMEOUT_CLEAN_QUEUE), as are sends that waited that long before being handled.
A write that ran on the loop itself (before the disk was seen to be slow) held up every request
while it ran, so those requests are seen only once it returns: after such a write held the store
longer than the limit, new sends are refused for as long as it held it.

Kafka Produce and gRPC SendMessage take the same path. A gRPC send is refused as a remoting one is
(the proxy answers SYSTEM_BUSY as TOO_MANY_REQUESTS). Kafka has no such refusal: a Produce in the
same conditions is stored and answered with `throttle_time_ms`, which librdkafka and the Java client
honour by backing off (`ProduceFlow`); each partition's batches are checked (producer sequences,
transactions), appended and recorded in one turn, so no other append comes between a check and
its record.

`SendFlowControl` is built with the App (`app.flow`) and observes every store write through
`Store.set_write_observer` (all writers: both protocols, the delay scheduler, transactions). The
store's `write_delay_ms` (tests and benchmarks only) adds a blocking sleep to each write: a
throttled disk on demand; its `write_hold_file` (tests only) stalls every write while that file
exists, and the disk counts as slow meanwhile, so writes wait on the worker thread, not the loop.
"""
from __future__ import annotations

import logging
import threading
import time
from contextlib import asynccontextmanager

import trio

from store.seams import writes_held

log = logging.getLogger("rocketgate.flow")

PC_BUSY = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
SLOW_WRITE_S = 0.1  # a store write taking longer than this means the disk is slow...
SLOW_FLUSH_S = 1.0  # a flush (fdatasync) taking longer than this means it too
SLOW_HOLD_S = 5.0  # ...and appends go off the event loop for this long after it
QUEUE_TIMEOUT = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited}ms, size of queue: {size}"


class SendRefused(Exception):
    """A send refused once its turn came (the remark of the SYSTEM_BUSY answer)."""


class SendFlowControl:
    def __init__(self, page_cache_busy_ms: int = 1000, wait_in_queue_ms: int = 200, clock=time.monotonic,
                 writing_since=lambda: None) -> None:
        self.page_cache_busy_s = page_cache_busy_ms / 1000.0
        self.wait_in_queue_s = wait_in_queue_ms / 1000.0
        self.clock = clock
        self.writing_since = writing_since  # the store's `write_began`: start of the write in progress
        self.loop_thread = threading.get_ident()  # built on the event loop's thread
        self.busy_until = 0.0
        self.slow_until = float("-inf")  # appends go to a worker thread until then
        self.refused = {"PC_SYNCHRONIZED": 0, "TIMEOUT_CLEAN_QUEUE": 0}
        self.throttled = 0
        self.offloaded = 0  # appends waiting for or running on the worker thread
        self._turn: trio.Lock | None = None
        self._logged_until = 0.0

    def observe(self, began: float, ended: float) -> None:
        """A store write held the store from `began` to `ended` (monotonic s), on any thread."""
        held = ended - began
        if held > SLOW_WRITE_S:
            self.slow_until = max(self.slow_until, ended + SLOW_HOLD_S)
        if held > self.page_cache_busy_s and threading.get_ident() == self.loop_thread:
            self.busy_until = max(self.busy_until, ended + held)  # it held up the loop: see the docstring

    async def append(self, store, msgs, read_at: float | None = None) -> list:
        """`store.append_many(msgs)`; on a worker thread while the disk is slow, where the send may be
        refused (SendRefused) once its turn comes if it waited too long for it."""
        if self.appends_inline(store):
            return store.append_many(msgs)
        async with self.worker_turn():
            busy = self.refusal(read_at, self.offloaded)
            if busy:
                raise SendRefused(busy)
            return await trio.to_thread.run_sync(store.append_many, msgs)

    def appends_inline(self, store) -> bool:
        """May the next append run on the loop (the disk keeps up, nothing is on the worker thread)?"""
        return not self.offloaded and not self._disk_slow(store)

    @asynccontextmanager
    async def worker_turn(self):
        """The worker thread's turn: one holder at a time, in arrival order."""
        if self._turn is None:
            self._turn = trio.Lock()
        self.offloaded += 1
        try:
            async with self._turn:
                yield
        finally:
            self.offloaded -= 1

    def _disk_slow(self, store) -> bool:
        now = self.clock()
        flush_began = store.flush_began
        if store.last_flush_s > SLOW_FLUSH_S or (flush_began is not None and now - flush_began > SLOW_FLUSH_S) \
                or writes_held(getattr(store, "config", None)):  # the stalled-disk test seam
            self.slow_until = max(self.slow_until, now + SLOW_HOLD_S)
        return now < self.slow_until

    def _page_cache_busy(self, now: float) -> bool:
        """isOSPageCacheBusy: a write in progress for longer than the limit, or the busy period after
        a write that held up the loop."""
        began = self.writing_since()
        return now < self.busy_until or (began is not None and now - began > self.page_cache_busy_s)

    def busy_remaining_s(self) -> float:
        now = self.clock()
        began = self.writing_since()
        if began is not None and now - began > self.page_cache_busy_s:
            return max(self.busy_until - now, now - began)  # at least as long again as it has held
        return max(0.0, self.busy_until - now)

    def refusal(self, read_at: float | None, queued: int = 1) -> str | None:
        """The SYSTEM_BUSY remark for a send whose frame was read at `read_at` (monotonic), or None."""
        now = self.clock()
        if self._page_cache_busy(now):
            return self._refuse("PC_SYNCHRONIZED", PC_BUSY, now)
        if read_at is not None and now - read_at >= self.wait_in_queue_s:
            waited = int((now - read_at) * 1000)
            return self._refuse("TIMEOUT_CLEAN_QUEUE", QUEUE_TIMEOUT.format(waited=waited, size=queued), now)
        return None

    def throttle_ms(self, read_at: float | None = None) -> int:
        """Kafka: how long the producer should back off (0 when there is no flow control)."""
        remaining = self.busy_remaining_s()
        if remaining <= 0 and read_at is not None and self.clock() - read_at >= self.wait_in_queue_s:
            remaining = self.wait_in_queue_s
        return self.throttle_for(remaining)

    def throttle_for(self, seconds: float) -> int:
        """A back-off of `seconds` as Kafka's throttle_time_ms (counted when there is one)."""
        if seconds <= 0:
            return 0
        self.throttled += 1
        return max(1, int(seconds * 1000))

    def _refuse(self, kind: str, remark: str, now: float) -> str:
        self.refused[kind] += 1
        if now >= self._logged_until:  # one line per stretch of flow control, not one per send
            log.warning("send flow control: %s (refused so far: %s)", remark, self.refused)
            self._logged_until = now + 1.0
        return remark


async def append_in_turn(flow: SendFlowControl, store, msgs) -> list:
    """`store.append_many(msgs)` for a writer whose append is already decided and is never refused (a
    send-back, a transaction's end, a delivery of the delay scheduler, the offsets mirror): on the loop
    while the disk keeps up, else on the worker thread in its turn, so a slow write does not stall the
    loop. Appends of one writer stay in the order it asked for them (one worker turn, arrival order)."""
    return await run_in_turn(flow, store, store.append_many, msgs)


async def run_in_turn(flow: SendFlowControl, store, write, *args):
    """`write(*args)` (a function that appends to `store`) as `append_in_turn` runs an append."""
    if flow.appends_inline(store):
        return write(*args)
    async with flow.worker_turn():
        return await trio.to_thread.run_sync(write, *args)


def append_each(store, msgs) -> list:
    """`store.append_many(msgs)`, else one by one: one bad message must not hold back the others
    (those the store refuses are logged and dropped)."""
    try:
        return store.append_many(msgs)
    except Exception:
        results = []
        for m in msgs:
            try:
                results.append(store.append(m))
            except Exception:
                log.exception("append to %s failed, dropped", m.topic)
        return results


@asynccontextmanager
async def write_turn(flow: SendFlowControl, store):
    """Check-append-record in one turn: yields `append(msgs)` (a coroutine function); no other flow
    append comes between entering and appending (inline: no checkpoint; else the worker turn)."""
    if flow.appends_inline(store):
        yield _inline_append(store)
        return
    async with flow.worker_turn():
        yield _worker_append(store)


def _inline_append(store):
    async def append(msgs) -> list:
        return store.append_many(msgs)
    return append


def _worker_append(store):
    async def append(msgs) -> list:
        return await trio.to_thread.run_sync(store.append_many, msgs)
    return append


class ProduceFlow:
    """One Kafka Produce request's appends under flow control. Kafka refuses nothing for a busy disk:
    the records are stored, and the answer's throttle_time_ms asks the producer to back off when
    - a write had been in progress past the busy limit when the request came (or a write on the loop
      started a busy period): the rest of that period;
    - it waited for the worker thread's turn as long as the send-queue limit: that limit;
    - its own writes off the loop took longer than the busy limit: as long as they took."""

    def __init__(self, flow: SendFlowControl, store) -> None:
        self.flow, self.store = flow, store
        self.busy_on_arrival_s = flow.busy_remaining_s()
        self.waited_s = 0.0  # for the worker thread's turn
        self.held_s = 0.0  # writing on the worker thread

    @asynccontextmanager
    async def turn(self):
        """One partition's check-append-record: yields `append(msgs)` (a coroutine function), which
        appends on the loop while the disk keeps up, else on the worker thread in this turn."""
        flow = self.flow
        if flow.appends_inline(self.store):
            yield self._inline  # no checkpoint between entering and appending: nothing comes between
            return
        asked = flow.clock()
        async with flow.worker_turn():
            self.waited_s += flow.clock() - asked
            yield self._off_loop

    async def _inline(self, msgs) -> list:
        return self.store.append_many(msgs)

    async def _off_loop(self, msgs) -> list:
        began = self.flow.clock()
        try:
            return await trio.to_thread.run_sync(self.store.append_many, msgs)
        finally:
            self.held_s += self.flow.clock() - began

    def throttle_ms(self) -> int:
        flow = self.flow
        seconds = max(self.busy_on_arrival_s, flow.busy_remaining_s())
        if self.waited_s >= flow.wait_in_queue_s:
            seconds = max(seconds, flow.wait_in_queue_s)
        if self.held_s > flow.page_cache_busy_s:
            seconds = max(seconds, self.held_s)
        return flow.throttle_for(seconds)
