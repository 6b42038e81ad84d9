"""Stored entries a reader cannot translate (a poison inner batch whose body is not a record batch,
a damaged entry): the request skips them and goes on; each is logged once (by CommitLog offset)
and counted, so one bad entry never fails a pull, fetch or query, nor floods the log."""
from __future__ import annotations

import logging

log = logging.getLogger("rocketgate.damaged")

REMEMBERED = 10_000  # entries logged already (bounded: a flood of bad entries cannot grow memory)


class DamagedEntries:
    def __init__(self) -> None:
        self.skipped = 0  # metric: every skip, by every request
        self._logged: set[int] = set()

    def skip(self, physical_offset: int, topic: str, queue_id: int, why) -> None:
        """Note that the entry at `physical_offset` was not served; the first time, log one line."""
        self.skipped += 1
        if physical_offset in self._logged:
            return
        if len(self._logged) >= REMEMBERED:
            self._logged.clear()
        self._logged.add(physical_offset)
        log.warning("skipped entry at CommitLog offset %d (%s-%d): %s", physical_offset, topic, queue_id, why)


DAMAGED = DamagedEntries()
