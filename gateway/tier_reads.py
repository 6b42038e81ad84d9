"""Reads that may reach the tier, without holding the event loop: a store read runs on the loop and
never waits for the object store (store.tier.cache answers Pending and downloads on a thread of its
own); `attempt` lists the downloads a read found pending, `settle` awaits them (the download's thread
wakes the loop when it ends), and `read` runs a read again until it found none pending. A slow or
paused object store then delays only the requests that need its data."""
from __future__ import annotations

import math

import trio

from store.tier.cache import collecting_misses

ROUNDS = 8  # reads of one request at most: each waits for the downloads the one before found pending


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
    deadline came: then what it could read)."""
    for _ in range(ROUNDS - 1):
        result, misses = attempt(fn, *args, **kwargs)
        if not misses or trio.current_time() >= deadline:
            return result
        await settle(misses, deadline)
    return fn(*args, **kwargs)
