"""Remoting handlers that read below a queue's local start (query by key, view by msgId, offset by
time): answered from their own task once the tier segments they need are downloaded
(gateway.tier_reads), so the connection's other requests and the event loop go on meanwhile."""
from __future__ import annotations

import functools

from gateway import tier_reads
from gateway.remoting.common import DEFERRED


def after_tier_reads(handler):
    """`handler(channel, req)`, a read without side effects, run again once the downloads it found
    pending have ended; answered at once when it found none."""
    @functools.wraps(handler)
    def wrapper(channel, req):
        resp, misses = tier_reads.attempt(handler, channel, req)
        if not misses:
            return resp

        async def again():
            await tier_reads.settle(misses)
            return await tier_reads.read(handler, channel, req)
        channel.spawn(req, again)
        return DEFERRED
    return wrapper
