"""A warning logged at most once per interval, so a failing dependency (an object store down while
clients retry many times a second) is reported without flooding the log."""
from __future__ import annotations

import logging
import time


class RateLimitedWarning:
    def __init__(self, log: logging.Logger, every_s: float = 30.0) -> None:
        self.log, self.every_s = log, every_s
        self._last = float("-inf")
        self._skipped = 0

    def warn(self, fmt: str, *args) -> None:
        """Log now if the last line is `every_s` old, saying how many were left out since."""
        now = time.monotonic()
        if now - self._last < self.every_s:
            self._skipped += 1
            return
        skipped, self._skipped, self._last = self._skipped, 0, now
        self.log.warning(fmt + (f" ({skipped} more like it not logged)" if skipped else ""), *args)
