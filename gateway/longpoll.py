"""Wake-ups for long polls (Kafka max_wait_ms, RocketMQ suspended pulls): waiters sleep on a
per-queue event that the hub, a store dispatcher, sets, so nothing busy-polls."""
from __future__ import annotations

import trio


class ArrivalHub:
    """Maps (topic, queue_id) to an event that fires on the next arrival in that queue."""

    def __init__(self) -> None:
        self._events: dict[tuple[str, int], trio.Event] = {}

    def dispatch(self, requests) -> None:
        """Store dispatcher (called synchronously, on the trio thread, inside the append): wake the
        waiters of every queue that got an entry."""
        events = self._events
        if not events:
            return
        for r in requests:
            event = events.pop((r.topic, r.queue_id), None)
            if event is not None:
                event.set()

    def notify(self, topic: str, queue_id: int) -> None:
        """Wake the waiters of one queue (a record available again without a new entry: POP)."""
        event = self._events.pop((topic, queue_id), None)
        if event is not None:
            event.set()

    def event(self, topic: str, queue_id: int) -> trio.Event:
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
