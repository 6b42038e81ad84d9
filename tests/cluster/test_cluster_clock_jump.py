"""A gateway's wall clock jumping (NTP step, a VM resumed) must neither fence a member nor make
it think its lease is renewed longer: the lease deadline and the fence read the monotonic clock
only (docs/cluster.md, "Fencing"). Injected clocks, no etcd."""
from __future__ import annotations

import time

import pytest
import trio

from cluster.coordination import Coordination
from cluster.model import Member
from gateway.cluster.ownership import ClusterNode

JUMPS = (3600.0, -3600.0, 86400.0 * 365)


def test_a_wall_clock_jump_neither_fences_nor_unfences(monkeypatch):
    mono = [1000.0]
    node = ClusterNode(Member(1, "127.0.0.1", 9092, 9876), None, None, 1)
    node.clock = lambda: mono[0]
    node.lease_deadline = mono[0] + 9.0
    real = time.time
    for jump in JUMPS:
        monkeypatch.setattr(time, "time", lambda jump=jump: real() + jump)
        assert not node.fenced()
    mono[0] += 9.0  # only the monotonic clock reaching the deadline fences
    assert node.fenced()
    for jump in JUMPS:
        monkeypatch.setattr(time, "time", lambda jump=jump: real() - jump)
        assert node.fenced()


class _Etcd:
    """A keep-alive that etcd always grants for the full TTL."""

    def __init__(self, ttl: int) -> None:
        self.ttl = ttl

    async def lease_keepalive(self, lease: int) -> int:
        return self.ttl


@pytest.mark.parametrize("jump", JUMPS)
def test_a_renewed_lease_deadline_is_on_the_monotonic_clock(monkeypatch, jump):
    ttl = 1
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + jump)
    renewed: list[float] = []

    async def main():
        async def lost():
            raise AssertionError("the lease is renewed, never lost")
        with trio.move_on_after(5):
            async with trio.open_nursery() as nursery:
                def on_renewed(expires):
                    renewed.append((expires, time.monotonic()))
                    nursery.cancel_scope.cancel()
                nursery.start_soon(lambda: Coordination(_Etcd(ttl)).keep_alive(
                    7, ttl, on_lost=lost, on_renewed=on_renewed))
    trio.run(main)
    [(expires, at)] = renewed
    assert at - 0.5 <= expires - ttl <= at  # counted from the keep-alive's send, on the monotonic clock
