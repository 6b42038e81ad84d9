"""The fetch session cache stays bounded (gateway/kafka/fetch_sessions.py, Kafka's FetchSessionCache rules):
when full, a session idle past the eviction time goes first, else the smallest if the new one is larger;
otherwise no session is made (the client keeps doing full fetches)."""
from __future__ import annotations

from gateway.kafka.fetch_sessions import EVICTION_S, FetchSessionCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _fill(cache, sizes):
    out = []
    for size in sizes:
        s = cache.open(True, size)
        for i in range(size):
            s.parts[(b"t" * 16, i)] = None
        out.append(s)
    return out


def test_full_cache_refuses_a_session_worth_no_more():
    cache = FetchSessionCache(slots=2, clock=Clock())
    _fill(cache, [3, 3])
    assert cache.open(True, 3) is None and len(cache.sessions) == 2


def test_full_cache_evicts_the_smallest_for_a_larger_session():
    cache = FetchSessionCache(slots=2, clock=Clock())
    small, big = _fill(cache, [1, 5])
    new = cache.open(True, 2)
    assert new is not None and set(cache.sessions) == {big.id, new.id}


def test_full_cache_evicts_an_idle_session_first():
    clock = Clock()
    cache = FetchSessionCache(slots=2, clock=clock)
    idle, busy = _fill(cache, [9, 9])
    clock.now += EVICTION_S + 1
    busy.last_used = clock.now
    new = cache.open(True, 1)
    assert new is not None and set(cache.sessions) == {busy.id, new.id}


def test_zero_slots_means_no_sessions():
    assert FetchSessionCache(slots=0).open(True, 4) is None
