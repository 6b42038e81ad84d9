"""`python -m bench.slow_proxy LISTEN_PORT UPSTREAM_PORT DELAY_MS RATE_BYTES_S`: a TCP proxy on
loopback that makes an object store slow, for bench/tier_slow.py. Each chunk read from either side is
passed on DELAY_MS after it arrived (a link's one-way latency, order kept), and what goes to the
upstream (uploads) at no more than RATE_BYTES_S over all connections. This kernel has no netem
qdisc (tests/faults/netns.py), so a process stands in for `tc netem delay` + a rate limit."""
from __future__ import annotations

import asyncio
import sys
import time

CHUNK = 64 * 1024


class Rate:
    """A shared token bucket: `take(n)` returns once n bytes may go."""

    def __init__(self, per_s: float) -> None:
        self.per_s, self.next_free = per_s, time.monotonic()

    async def take(self, n: int) -> None:
        now = time.monotonic()
        self.next_free = max(self.next_free, now) + n / self.per_s  # these bytes are through then
        await asyncio.sleep(self.next_free - now)


async def pipe(reader, writer, delay: float, rate: Rate | None) -> None:
    """Copies reader to writer, each chunk `delay` s after it was read (chunks stay in order)."""
    queue: asyncio.Queue = asyncio.Queue()

    async def send() -> None:
        while (item := await queue.get()) is not None:
            arrived, data = item
            await asyncio.sleep(max(0.0, arrived + delay - time.monotonic()))
            if rate is not None:
                await rate.take(len(data))
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(CHUNK):
            queue.put_nowait((time.monotonic(), data))
    except ConnectionError:
        pass
    queue.put_nowait(None)
    try:
        await sender
    except ConnectionError:
        pass


async def main(listen: int, upstream: int, delay_ms: float, rate_bytes_s: float) -> None:
    delay, rate = delay_ms / 1000, Rate(rate_bytes_s) if rate_bytes_s > 0 else None

    async def handle(client_r, client_w) -> None:
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pipe(client_r, up_w, delay, rate), pipe(up_r, client_w, delay, None))

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    listen_port, upstream_port, delay_ms_arg, rate_arg = sys.argv[1:5]
    asyncio.run(main(int(listen_port), int(upstream_port), float(delay_ms_arg), float(rate_arg)))
