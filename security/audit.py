"""Keeping refusals cheap to log and costly to repeat: denied attempts (and anything else a peer can
trigger at will, through `RateLimitedLog`) are logged once per principal/resource/minute, and authentication failures are rate-limited per source address with a
token bucket. Both take an injectable clock (seconds, monotonic) and bound their memory."""
from __future__ import annotations

import logging
import time

log = logging.getLogger("rocketgate.security")

DENIAL_LOG_WINDOW_S = 60.0
MAX_TRACKED = 10_000


class RateLimitedLog:
    """`warning(key, msg, *args)` logs unless a line with the same key was logged within the window;
    returns whether it logged. Suppressed repeats are counted and reported with the next line for that
    key, and by `report_suppressed()` (at shutdown) for keys that never got a next line. Denials use
    it, and so does anything a remote peer can trigger at will (malformed frames)."""

    def __init__(self, logger: logging.Logger = log, clock=time.monotonic, window_s: float = DENIAL_LOG_WINDOW_S,
                 max_keys: int = MAX_TRACKED) -> None:
        self.logger, self.clock, self.window, self.max_keys = logger, clock, window_s, max_keys
        self._last: dict[tuple, list] = {}  # key -> [last logged at, suppressed since, last message]

    def warning(self, key: tuple, msg: str, *args) -> bool:
        now = self.clock()
        seen = self._last.get(key)
        if seen is not None and now - seen[0] < self.window:
            seen[1] += 1
            return False
        suppressed = seen[1] if seen is not None else 0
        if seen is None and len(self._last) >= self.max_keys:
            self._forget_old(now)
        line = msg % args if args else msg
        self._last[key] = [now, 0, line]
        self.logger.warning("%s%s", line, f" ({suppressed} more since the last report)" if suppressed else "")
        return True

    def report_suppressed(self) -> int:
        """Log one line per key with repeats not yet reported; the total reported."""
        total = 0
        for seen in self._last.values():
            if seen[1]:
                self.logger.warning("%d more like this since the last report: %s", seen[1], seen[2])
                total, seen[1] = total + seen[1], 0
        return total

    def _forget_old(self, now: float) -> None:
        for key in [k for k, v in self._last.items() if now - v[0] >= self.window]:
            del self._last[key]
        while len(self._last) >= self.max_keys:  # all recent: drop the oldest
            del self._last[next(iter(self._last))]


class DenialLog(RateLimitedLog):
    """`denied(...)` logs a refusal unless the same principal was refused the same operation on the
    same resource within the window; returns whether it logged."""

    def denied(self, principal: str, operation: str, resource: str, address: str, reason: str = "") -> bool:
        return self.warning((principal, operation, resource), "denied %s %s on %s from %s%s", principal, operation,
                            resource, address, f": {reason}" if reason else "")


class FailureLimiter:
    """Authentication failures per source address: each costs a token; an address with no token left
    is refused without checking its credentials until a token refills (`rate` per second, up to
    `burst`). Addresses whose bucket is full again are forgotten."""

    def __init__(self, rate: float = 1.0, burst: int = 10, clock=time.monotonic,
                 max_addresses: int = MAX_TRACKED) -> None:
        self.rate, self.burst, self.clock, self.max_addresses = rate, float(burst), clock, max_addresses
        self._buckets: dict[str, list] = {}  # address -> [tokens, at]

    def _tokens(self, address: str, now: float) -> float:
        bucket = self._buckets.get(address)
        if bucket is None:
            return self.burst
        return min(self.burst, bucket[0] + (now - bucket[1]) * self.rate)

    def blocked(self, address: str) -> bool:
        """True while the address has used up its failures."""
        return self._tokens(address, self.clock()) < 1.0

    def failed(self, address: str) -> None:
        now = self.clock()
        tokens = self._tokens(address, now)
        if address not in self._buckets and len(self._buckets) >= self.max_addresses:
            self._forget_full(now)
        self._buckets[address] = [max(0.0, tokens - 1.0), now]

    def _forget_full(self, now: float) -> None:
        for address in [a for a in self._buckets if self._tokens(a, now) >= self.burst]:
            del self._buckets[address]
        while len(self._buckets) >= self.max_addresses:
            del self._buckets[next(iter(self._buckets))]
