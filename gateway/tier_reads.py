"""Reads that may reach the tier, without holding the event loop: a store read runs on the loop and
never waits for the object store (store.tier.cache answers Pending and downloads on a thread of its
own); `attempt` lists the downloads a read found pending, `settle` awaits them (the download's thread
wakes the loop when it ends), and `read` runs a read again until it found none pending. A slow or
paused object store then delays only the requests that need its data."""
from __future__ import annotations

import math

import trio

from store.tier.cache import collecting_misses

ROUNDS = 8  # reads in a row that found only the downloads the read before found: then what it could read
SCAN_BUDGET_S = 30.0  # past ROUNDS reads, how long a read that keeps finding new pieces pending goes on


def attempt(fn, *args, **kwargs):
    """(fn(*args, **kwargs), the tier downloads it found pending: empty when it read everything)."""
    with collecting_misses() as misses:
        return fn(*args, **kwargs), misses


async def settle(downloads, deadline: float = math.inf) -> None:
    """Until every download in `downloads` has ended (well or not), or `deadline` (trio time)."""
    token = trio.lowlevel.current_trio_token()
    with trio.move_on_at(deadline):
        for download in downloads:
            ended = trio.Event()

            def wake(ended=ended) -> None:
                try:
                    token.run_sync_soon(ended.set)
                except trio.RunFinishedError:  # the gateway stopped meanwhile
                    pass
            download.when_done(wake)
            await ended.wait()


async def read(fn, *args, deadline: float = math.inf, **kwargs):
    """fn(*args, **kwargs) once the tier segments it needs are in the read cache (or failed, or the
    deadline came: then what it could read). A read that found new pieces pending has moved on (a
    search by time scans the tier a few pieces a read, and gave up after ROUNDS reads half way
    before): it is read again while each read finds new ones, up to SCAN_BUDGET_S; ROUNDS reads in
    a row that found nothing new give up as before."""
    seen: set = set()  # every download found pending (kept, so none is mistaken for a new one)
    stalled, rounds, began = 0, 0, trio.current_time()
    while True:
        result, misses = attempt(fn, *args, **kwargs)
        rounds += 1
        if not misses or trio.current_time() >= deadline:
            return result
        stalled = 0 if any(m not in seen for m in misses) else stalled + 1
        seen.update(misses)
        if stalled >= ROUNDS - 1 or (rounds >= ROUNDS and trio.current_time() - began > SCAN_BUDGET_S):
            return fn(*args, **kwargs)
        await settle(misses, deadline)
