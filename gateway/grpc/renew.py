"""Server-side lease renewal for ReceiveMessage calls with `auto_renew` (push consumers), as the
RocketMQ proxy's receipt handle manager does: while the client's connection lives, a lease that
is about to run out is extended by RENEW_SLICE_MS, until the message is acknowledged, its lease
lost, the client changed its invisible time itself (ChangeInvisibleDuration: a nack), or
RENEW_MAX_MS passed since it was received. When the connection ends the client is gone:
renewal stops and its messages come back when their leases run out.

A message received through a diskless bucket's POP owner (gateway.diskless_pop_grpc: another
gateway holds its lease) is renewed there, by a forwarded change of invisible time, when the lease
this gateway knows of (its receive time plus the invisible time, then plus each slice) is about to
end; before, its lease was looked for here, not found, and never renewed, so a push consumer's
message came back to the group while it was still being processed.

One Renewer per connection (GrpcConnection.service), started by the first auto-renew receive."""
from __future__ import annotations

import trio

import gateway.diskless_pop_grpc as diskless_pop_grpc
from gateway.grpc.common import RpcError

RENEW_SLICE_MS = 60_000  # the proxy's renewSliceTimeMillis
RENEW_AHEAD_MS = 10_000  # renew a lease this close to its end (the proxy's renewAheadTimeMillis)
RENEW_MAX_MS = 3 * 3600 * 1000  # stop renewing this long after the receive (the proxy's renewMaxTimeMillis)
CHECK_EVERY_S = 1.0


def _now_ms() -> float:
    return trio.current_time() * 1000


class Renewer:
    def __init__(self, app) -> None:
        self.app = app
        self.held: dict = {}  # Receipt -> when it was received (pop engine clock, ms)
        self.remote: dict = {}  # Receipt at the POP owner -> [when received, its lease's end] (trio clock, ms)

    def hold(self, receipts) -> None:
        now = self.app.pop.clock()
        for r in receipts:
            self.held[r] = now

    def hold_remote(self, receipts, invisible_ms: int) -> None:
        """Receipts of the bucket's POP owner, leased there for `invisible_ms` from now."""
        now = _now_ms()
        for r in receipts:
            self.remote[r] = [now, now + invisible_ms]

    def release(self, receipt) -> None:
        """The client acknowledged the message or set its invisible time itself (ChangeInvisibleDuration,
        a push consumer's nack): renewal stops, as the proxy removes the handle."""
        self.held.pop(receipt, None)
        self.remote.pop(receipt, None)

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

    async def renew_remote_due(self) -> None:
        """Renew at the POP owner the leases about to end there; forget acknowledged, lost and too
        old ones. One whose owner is now this gateway (it took the lease and the in-flight state)
        is renewed here from then on."""
        for receipt, times in list(self.remote.items()):
            since, deadline = times
            now = _now_ms()
            if deadline <= now or now - since >= RENEW_MAX_MS:
                self.remote.pop(receipt, None)
                continue
            if deadline - now > RENEW_AHEAD_MS:
                continue
            try:
                renewed = await diskless_pop_grpc.change_invisible(self.app, receipt, RENEW_SLICE_MS)
            except RpcError:
                continue  # the owner refused for now (busy): tried again at the next check while the lease lasts
            if receipt not in self.remote:
                continue  # acknowledged or changed by the client meanwhile
            if renewed:
                times[1] = _now_ms() + RENEW_SLICE_MS
                continue
            del self.remote[receipt]
            if renewed is None and self.app.pop.lease(receipt) is not None:  # served here now
                self.held[receipt] = self.app.pop.clock() - (_now_ms() - since)

    async def run(self) -> None:
        while True:
            await trio.sleep(CHECK_EVERY_S)
            end = self.renew_due()
            if end:
                await self.app.durable(end)
            if self.remote:
                await self.renew_remote_due()
