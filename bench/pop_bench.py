"""POP consumption benchmark with the native SimpleConsumer, standalone:
    python -m bench.pop_bench [--namesrv HOST:PORT] [--messages N] [--consumers C] [--body BYTES]
Without --namesrv it starts a gateway (tests/gateway_process.py) in a temp dir. Prints JSON lines:
- "pop": N messages produced, then C concurrent receive/ack loops (invisible 30 s) until all are
  acknowledged: consume TPS (acked messages per second) and ack latency p50/p99 (ms, one ACK_MESSAGE
  round trip each, the acks of one answer concurrently);
- "redelivery": messages received with a 1 s invisible time and not acknowledged, received again by
  a long-polling consumer (which does not stop to ack): lateness of each redelivery after its deadline, p50/p99/max (ms).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import trio

from client import AsyncProducer, AsyncSimpleConsumer, ConsumeFrom, Message


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else 0.0


async def produce(namesrv: str, topic: str, n: int, body: bytes) -> None:
    async with trio.open_nursery() as nursery:
        producer = AsyncProducer("pop-bench-producer", namesrv)
        await producer.start(nursery)
        sent = 0

        async def worker():
            nonlocal sent
            while sent < n:
                sent += 1
                await producer.send(Message(topic, body))
        async with trio.open_nursery() as workers:
            for _ in range(16):
                workers.start_soon(worker)
        await producer.shutdown()
        nursery.cancel_scope.cancel()


async def consume(namesrv: str, topic: str, n: int, consumers: int) -> dict:
    acked, latencies = 0, []
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        async def loop():
            nonlocal acked
            c = AsyncSimpleConsumer("pop-bench", namesrv, subscriptions={topic: "*"}, await_duration=2,
                                    consume_from=ConsumeFrom.FIRST_OFFSET)
            async with trio.open_nursery() as own:
                await c.start(own)
                async def ack(m):
                    nonlocal acked
                    t0 = time.perf_counter()
                    await c.ack(m)
                    latencies.append((time.perf_counter() - t0) * 1000)
                    acked += 1
                while acked < n:
                    msgs = await c.receive(max_messages=32, invisible_duration=30)
                    async with trio.open_nursery() as acks:  # the acks of one answer go out together
                        for m in msgs:
                            acks.start_soon(ack, m)
                await c.shutdown()
        for _ in range(consumers):
            nursery.start_soon(loop)
    elapsed = time.perf_counter() - start
    return {"bench": "pop", "messages": acked, "consumers": consumers, "seconds": round(elapsed, 3),
            "tps": round(acked / elapsed, 1), "ack_p50_ms": round(pct(latencies, 50), 3),
            "ack_p99_ms": round(pct(latencies, 99), 3)}


async def redelivery(namesrv: str, topic: str, n: int) -> dict:
    async with trio.open_nursery() as nursery:
        c = AsyncSimpleConsumer("pop-bench-redo", namesrv, subscriptions={topic: "*"}, await_duration=5,
                                consume_from=ConsumeFrom.FIRST_OFFSET)
        await c.start(nursery)
        deadlines = {}
        while len(deadlines) < n:
            for m in await c.receive(max_messages=32, invisible_duration=1.0):
                pop_time, invisible = (int(x) for x in m.properties["POP_CK"].split(" ")[1:3])
                deadlines[(m.queue_id, m.queue_offset)] = pop_time + invisible
        late = []
        while len(late) < n:
            for m in await c.receive(max_messages=32, invisible_duration=30):
                late.append(time.time() * 1000 - deadlines[(m.queue_id, m.queue_offset)])
        await c.shutdown()
        nursery.cancel_scope.cancel()
    return {"bench": "redelivery", "messages": n, "late_p50_ms": round(pct(late, 50), 1),
            "late_p99_ms": round(pct(late, 99), 1), "late_max_ms": round(max(late), 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--namesrv")
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--body", type=int, default=128)
    ap.add_argument("--redeliveries", type=int, default=200)
    args = ap.parse_args()
    gateway = None
    if args.namesrv is None:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
        from gateway_process import GatewayProcess
        gateway = GatewayProcess(os.path.join(tempfile.mkdtemp(prefix="pop-bench-"), "data")).start()
        args.namesrv = gateway.namesrv
    try:
        trio.run(produce, args.namesrv, "PopBench", args.messages, b"x" * args.body)
        print(json.dumps(trio.run(consume, args.namesrv, "PopBench", args.messages, args.consumers)), flush=True)
        trio.run(produce, args.namesrv, "PopBenchRedo", args.redeliveries, b"x" * args.body)
        print(json.dumps(trio.run(redelivery, args.namesrv, "PopBenchRedo", args.redeliveries)), flush=True)
    finally:
        if gateway is not None:
            gateway.stop()


if __name__ == "__main__":
    main()
