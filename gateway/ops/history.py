"""The console's recent history, kept in the gateway itself (no external time-series store): every
SAMPLE_EVERY_S the sampler reads cumulative counters (CommitLog bytes, messages and bytes
produced and bytes served per topic, messages stored per topic, lag per group) into a bounded
ring of KEEP samples (5 s x 720 = 1 h). Each series is an array of floats indexed by the sample
number modulo KEEP, so memory is fixed per series; a series that has not changed for a whole
window is dropped, and at most MAX_SERIES are kept, so 10 000 idle topics cost nothing."""
from __future__ import annotations

import math
import time
from array import array

import trio

import gateway.ops.inspect as inspect
from gateway.ops.shard_view import leads

SAMPLE_EVERY_S = 5.0
KEEP = 720  # one hour of 5 s samples
MAX_SERIES = 4000  # series beyond this are not tracked (the page says so)


class Ring:
    """Named series of samples taken at shared times; NaN where a series had no value yet."""

    def __init__(self, keep: int = KEEP, max_series: int = MAX_SERIES) -> None:
        self.keep = keep
        self.max_series = max_series
        self.tick = -1  # number of the newest sample
        self.times = array("d", [math.nan] * keep)
        self.series: dict[str, array] = {}
        self._changed: dict[str, int] = {}  # series -> tick of its last change
        self._last: dict[str, float] = {}

    def begin(self, now: float) -> None:
        """Start a new sample taken at `now` (seconds since the epoch)."""
        self.tick += 1
        self.times[self.tick % self.keep] = now
        for values in self.series.values():
            values[self.tick % self.keep] = math.nan

    def put(self, name: str, value: float) -> None:
        values = self.series.get(name)
        if values is None:
            if not value or len(self.series) >= self.max_series:
                return  # a zero counter is nothing to chart yet
            values = self.series[name] = array("d", [math.nan] * self.keep)
        values[self.tick % self.keep] = value
        if self._last.get(name) != value:
            self._last[name] = value
            self._changed[name] = self.tick

    def end(self) -> None:
        """Drop series unchanged for a whole window (idle topics, deleted groups)."""
        for name in [n for n, t in self._changed.items() if self.tick - t >= self.keep]:
            self.series.pop(name, None)
            self._changed.pop(name, None)
            self._last.pop(name, None)

    def points(self, name: str) -> list[tuple[float, float]]:
        """(time, value) of a series, oldest first, skipping samples where it had none."""
        values = self.series.get(name)
        if values is None:
            return []
        first = max(0, self.tick - self.keep + 1)
        out = []
        for tick in range(first, self.tick + 1):
            v = values[tick % self.keep]
            if not math.isnan(v):
                out.append((self.times[tick % self.keep], v))
        return out

    def rates(self, name: str) -> list[tuple[float, float]]:
        """Per-second increase of a cumulative counter between consecutive samples (never negative:
        a counter that restarted counts from zero)."""
        pts = self.points(name)
        return [(t1, max(0.0, (v1 - v0) / (t1 - t0))) for (t0, v0), (t1, v1) in zip(pts, pts[1:]) if t1 > t0]

    def latest_rate(self, name: str) -> float | None:
        found = self.rates(name)[-1:] if name in self.series else []
        return found[0][1] if found else None


DISK_USAGE_S = 30.0  # disk usage is walked at most this often (10 000 topics: ~0.6 s)


class History:
    """The gateway's ring of samples and the sampler that fills it, and the store's disk usage."""

    def __init__(self, app, ring: Ring | None = None) -> None:
        self.app = app
        self.ring = ring or Ring()
        self._walked_at = -DISK_USAGE_S
        self._usage: dict[str, int] = {}

    async def disk_usage(self) -> dict[str, int]:
        """Bytes per store directory, walked in a worker thread (it only reads the file system), at
        most every DISK_USAGE_S."""
        if time.monotonic() - self._walked_at >= DISK_USAGE_S:
            self._usage = await trio.to_thread.run_sync(inspect.disk_usage, self.app)
            self._walked_at = time.monotonic()
        return self._usage

    def sample(self, now: float | None = None) -> None:
        app, ring = self.app, self.ring
        stats, st = app.stats, app.store
        ring.begin(time.time() if now is None else now)
        ring.put("commitlog", st.max_physical_offset)
        served: dict[str, int] = {}
        for (_protocol, topic), n in stats.fetched_bytes.items():
            served[topic] = served.get(topic, 0) + n
        for topic, n in stats.appended.items():
            ring.put(f"in:{topic}", n)
        for topic, n in stats.appended_bytes.items():
            ring.put(f"bytes_in:{topic}", n)
        for topic, n in served.items():
            ring.put(f"bytes_out:{topic}", n)
        ring.put("bytes_in", sum(stats.appended_bytes.values()))
        ring.put("bytes_out", sum(served.values()))
        for topic in {*stats.appended, *served}:  # what is produced or read: its size over time
            if st.topics.get(topic) is not None:
                ring.put(f"stored:{topic}", sum(hi - lo for lo, hi in inspect.queue_range(st, topic).values()))
        for group, rows in inspect.all_lag(app).items():  # a shard: the lag on the queues it leads
            ring.put(f"lag:{group}", sum(r["lag"] for r in rows if leads(app, r["topic"], r["queue"])))
        ring.end()

    async def run(self) -> None:
        every = getattr(self.app.config, "console_sample_ms", SAMPLE_EVERY_S * 1000) / 1000
        while True:
            self.sample()
            await trio.sleep(every)
