"""Broker-side send flow control (消息流控, producer side), for both protocols.

RocketMQ refuses new sends with SYSTEM_BUSY when
- a CommitLog write has held the store lock longer than `osPageCacheBusyTimeOutMills` (1000 ms):
  remark "[PC_SYNCHRONIZED]broker busy, start flow control for a while";
- a send request has waited in the send queue longer than `waitTimeMillsInSendQueue` (200 ms;
  BrokerFastFailure looks every 10 ms): remark "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control
  for a while, period in queue: Nms, size of queue: N".
The Java producer does not retry SYSTEM_BUSY on another queue (it is not in retryResponseCodes).

The gateway runs the store on its event loop, so nothing is read while a write holds the store: the
requests that queue meanwhile are only seen once it returns. So after a write that held the store
longer than the limit, new sends are refused for as long as that write held it (RocketMQ would have
refused those while the lock was held), and a send is refused when more than the queue limit passed
between reading its frame and reaching the store (checked when it is handled, so exactly, not
every 10 ms). Kafka Produce in the same conditions is stored and answered with `throttle_time_ms`
(the rest of the busy period), which librdkafka and the Java client honour by backing off.

`SendFlowControl` is built with the App (`app.flow`) and observes every store write through
`Store.set_write_observer` (all writers: both protocols, the delay scheduler, transactions). The
store's `write_delay_ms` (tests and benchmarks only) adds a blocking sleep to each write: a
throttled disk on demand.
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger("rocketgate.flow")

PC_BUSY = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
QUEUE_TIMEOUT = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited}ms, size of queue: {size}"


class SendFlowControl:
    def __init__(self, page_cache_busy_ms: int = 1000, wait_in_queue_ms: int = 200, clock=time.monotonic) -> None:
        self.page_cache_busy_s = page_cache_busy_ms / 1000.0
        self.wait_in_queue_s = wait_in_queue_ms / 1000.0
        self.clock = clock
        self.busy_until = 0.0
        self.refused = {"PC_SYNCHRONIZED": 0, "TIMEOUT_CLEAN_QUEUE": 0}
        self.throttled = 0
        self._logged_until = 0.0

    def observe(self, began: float, ended: float) -> None:
        """A store write held the store from `began` to `ended` (monotonic s): a write holding it
        too long starts a busy period as long as that write."""
        held = ended - began
        if held > self.page_cache_busy_s:
            self.busy_until = max(self.busy_until, ended + held)

    def busy_remaining_s(self) -> float:
        return max(0.0, self.busy_until - self.clock())

    def refusal(self, read_at: float | None, queued: int = 1) -> str | None:
        """The SYSTEM_BUSY remark for a send whose frame was read at `read_at` (monotonic), or None."""
        now = self.clock()
        if now < self.busy_until:
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
        if remaining <= 0:
            return 0
        self.throttled += 1
        return max(1, int(remaining * 1000))

    def _refuse(self, kind: str, remark: str, now: float) -> str:
        self.refused[kind] += 1
        if now >= self._logged_until:  # one line per stretch of flow control, not one per send
            log.warning("send flow control: %s (refused so far: %s)", remark, self.refused)
            self._logged_until = now + 1.0
        return remark
