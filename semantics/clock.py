"""The time the timer-driven services read: wall-clock milliseconds (for due times and store
timestamps) and waits on trio's clock. Tests run the same services under
`trio.testing.MockClock` with `TrioWallClock`, whose wall time moves with trio's clock."""
from __future__ import annotations

import time

import trio


class WallClock:
    """Production: the system's wall clock; waiting is trio's."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


class TrioWallClock(WallClock):
    """Wall-clock ms that advance with trio's clock (a MockClock in tests), anchored at the real
    wall time the first time it is read inside trio.run: store timestamps stay comparable."""

    def __init__(self) -> None:
        self._anchor_ms: float | None = None

    def now_ms(self) -> int:
        t = trio.current_time() * 1000
        if self._anchor_ms is None:
            self._anchor_ms = time.time() * 1000 - t
        return int(self._anchor_ms + t)


WALL_CLOCK = WallClock()
