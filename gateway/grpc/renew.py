"""Server-side lease renewal for ReceiveMessage calls with `auto_renew` (push consumers), as the
RocketMQ proxy's receipt handle manager does: while the client's connection lives, a lease that
is about to run out is extended by RENEW_SLICE_MS, until the message is acknowledged, its lease
lost, the client changed its invisible time itself (ChangeInvisibleDuration: a nack), or
RENEW_MAX_MS passed since it was received. When the connection ends the client is gone:
renewal stops and its messages come back when their leases run out.

One Renewer per connection (GrpcConnection.service), started by the first auto-renew receive."""
from __future__ import annotations

import trio

RENEW_SLICE_MS = 60_000  # the proxy's renewSliceTimeMillis
RENEW_AHEAD_MS = 10_000  # renew a lease this close to its end (the proxy's renewAheadTimeMillis)
RENEW_MAX_MS = 3 * 3600 * 1000  # stop renewing this long after the receive (the proxy's renewMaxTimeMillis)
CHECK_EVERY_S = 1.0


class Renewer:
    def __init__(self, app) -> None:
        self.app = app
        self.held: dict = {}  # Receipt -> when it was received (pop engine clock, ms)

    def hold(self, receipts) -> None:
        now = self.app.pop.clock()
        for r in receipts:
            self.held[r] = now

    def release(self, receipt) -> None:
        """The client set this message's invisible time itself (ChangeInvisibleDuration, a push
        consumer's nack): renewal stops, as the proxy removes the handle."""
        self.held.pop(receipt, None)

    def renew_due(self) -> int:
        """Renew the leases about to end; forget acknowledged, lost and too old ones. Returns the
        CommitLog end offset of the last renewal (0: none)."""
        engine, now, end = self.app.pop, self.app.pop.clock(), 0
        for receipt, since in list(self.held.items()):
            lease = engine.lease(receipt)
            if lease is None or lease.deadline <= now or now - since >= RENEW_MAX_MS:
                del self.held[receipt]
                continue
            if lease.deadline - now <= RENEW_AHEAD_MS:
                renewed = engine.renew(receipt, RENEW_SLICE_MS)
                if renewed is None:
                    del self.held[receipt]
                else:
                    end = max(end, renewed[1])
        return end

    async def run(self) -> None:
        while True:
            await trio.sleep(CHECK_EVERY_S)
            end = self.renew_due()
            if end:
                await self.app.durable(end)
