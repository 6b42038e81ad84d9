"""The console's history ring (gateway.ops.history.Ring): bounded per series, rates from
cumulative counters, idle series dropped after a window, a cap on the number of series."""
from __future__ import annotations

from gateway.ops.history import Ring
from gateway.ops.html import chart, rate, size


def test_ring_keeps_the_last_window_and_computes_rates():
    ring = Ring(keep=4)
    for tick in range(10):
        ring.begin(100.0 + 5 * tick)
        ring.put("bytes", 1000 * tick)
        ring.end()
    assert ring.points("bytes") == [(130.0, 6000), (135.0, 7000), (140.0, 8000), (145.0, 9000)]
    assert ring.rates("bytes") == [(135.0, 200.0), (140.0, 200.0), (145.0, 200.0)]
    assert ring.latest_rate("bytes") == 200.0 and ring.latest_rate("nothing") is None
    assert len(ring.series["bytes"]) == 4  # fixed memory, however long it runs


def test_series_start_late_stop_when_idle_and_are_capped():
    ring = Ring(keep=3, max_series=2)
    ring.begin(0.0)
    ring.put("zero", 0)  # a zero counter is nothing to chart yet
    ring.put("a", 5)
    ring.end()
    ring.begin(1.0)
    ring.put("a", 5)
    ring.put("b", 1)
    ring.put("c", 1)  # over the cap: not tracked
    ring.end()
    assert set(ring.series) == {"a", "b"}
    assert ring.points("b") == [(1.0, 1)]  # no value before it started
    for t in (2.0, 3.0, 4.0):
        ring.begin(t)
        ring.put("b", t)
        ring.end()
    assert "a" not in ring.series and "b" in ring.series  # a: unchanged (and unsampled) for a window
    assert ring.rates("restarted") == []


def test_counter_restart_is_not_a_negative_rate_and_formats_for_people():
    ring = Ring(keep=5)
    for t, v in ((0.0, 10), (5.0, 20), (10.0, 3)):
        ring.begin(t)
        ring.put("c", v)
    assert ring.rates("c") == [(5.0, 2.0), (10.0, 0.0)]
    assert (size(0), size(1536), size(5 * 1024 ** 3), rate(2048), rate(3.25, "msg"), rate(None)) == \
        ("0 B", "1.5 KiB", "5.0 GiB", "2.0 KiB/s", "3.2 msg/s", "-")
    svg = chart([(0.0, 0.0), (60.0, 2048.0)], "Produced <x>", rate)
    assert "<polyline" in svg and "2.0 KiB/s" in svg and "Produced &lt;x&gt;" in svg and "60 s ago" in svg
    assert "collecting samples" in chart([(0.0, 1.0)], "one point")
