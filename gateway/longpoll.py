"""Wake-ups for long polls (Kafka max_wait_ms, RocketMQ suspended pulls): waiters sleep on a
per-queue event that the hub, a store dispatcher, sets, so nothing busy-polls. Appends also run on
worker threads (a slow disk: semantics.flow_control), so the hub wakes from any thread."""
from __future__ import annotations

import trio


class ArrivalHub:
    """Maps (topic, queue_id) to an event that fires on the next arrival in that queue."""

    def __init__(self) -> None:
        self._events: dict[tuple[str, int], trio.Event] = {}
        self._token: trio.lowlevel.TrioToken | None = None  # the loop the waiters sleep on

    def dispatch(self, requests) -> None:
        """Store dispatcher (called synchronously inside the append): wake the waiters of every queue
        that got an entry. Off the loop (an append on a worker thread) the wake-up is handed to the
        loop without waiting for it: the loop may itself be waiting for the store lock held here."""
        self._wake_from_any_thread([(r.topic, r.queue_id) for r in requests])

    def _wake_from_any_thread(self, keys) -> None:
        token = self._token
        if token is None:  # no waiter has ever slept: nobody to wake
            return
        if _current_token() is token:
            self._wake(keys)
            return
        try:
            token.run_sync_soon(self._wake, keys)
        except trio.RunFinishedError:  # the loop has ended (shutdown): no waiter is left
            pass

    def _wake(self, keys) -> None:
        events = self._events
        if not events:
            return
        for key in keys:
            event = events.pop(key, None)
            if event is not None:
                event.set()

    def notify(self, topic: str, queue_id: int) -> None:
        """Wake the waiters of one queue (a record available again without a new entry: POP)."""
        self._wake_from_any_thread([(topic, queue_id)])

    def event(self, topic: str, queue_id: int) -> trio.Event:
        if self._token is None:
            self._token = trio.lowlevel.current_trio_token()
        key = (topic, queue_id)
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = trio.Event()
        return event

    async def wait_any(self, keys, timeout: float) -> bool:
        """Sleep until any of the queues gets a message or `timeout` seconds pass; True if woken."""
        if timeout <= 0:
            return False
        events = [self.event(t, q) for t, q in keys]
        if not events:
            await trio.sleep(timeout)
            return False
        woken = False
        with trio.move_on_after(timeout):
            async with trio.open_nursery() as nursery:
                async def watch(ev: trio.Event) -> None:
                    nonlocal woken
                    await ev.wait()
                    woken = True
                    nursery.cancel_scope.cancel()
                for ev in events:
                    nursery.start_soon(watch, ev)
        return woken


def _current_token() -> trio.lowlevel.TrioToken | None:
    """The token of the trio loop running on this thread (None on a worker thread)."""
    try:
        return trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None
