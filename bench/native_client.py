"""Native send and consume TPS with the project's own Python RocketMQ client (client/), as its own process:
    python -m bench.native_client NAMESRV TOPIC SECONDS BODY_BYTES [CONCURRENCY [REPS]]
prints one JSON line per send window (the same method as RmqBench: concurrent synchronous sends
for a fixed time, after a first send that resolves the route), then one per consume window: a lite
pull consumer of a new group reads everything sent back from the first offset."""
from __future__ import annotations

import json
import sys
import time

import trio

from client import AsyncLitePullConsumer, AsyncProducer, ConsumeFrom, Message, SendStatus


async def window(producer: AsyncProducer, topic: str, body: bytes, seconds: float, concurrency: int) -> dict:
    sent = failed = 0
    start = time.perf_counter()
    deadline = start + seconds

    async def worker() -> None:
        nonlocal sent, failed
        while time.perf_counter() < deadline:
            try:
                r = await producer.send(Message(topic, body))
            except Exception:  # noqa: BLE001 - counted, the run goes on
                failed += 1
                continue
            if r.status == SendStatus.SEND_OK:
                sent += 1
            else:
                failed += 1

    async with trio.open_nursery() as workers:
        for _ in range(concurrency):
            workers.start_soon(worker)
    elapsed = time.perf_counter() - start
    return {"sent": sent, "failed": failed, "seconds": elapsed, "tps": sent / elapsed}


async def consume_window(namesrv: str, topic: str, group: str, expected: int, limit: float) -> dict:
    """Read `expected` messages of `topic` from the first offset with a new group; TPS from the
    first message received to the last."""
    received = 0
    first = None
    async with trio.open_nursery() as nursery:
        consumer = AsyncLitePullConsumer(group, namesrv, auto_commit=False, consume_from=ConsumeFrom.FIRST_OFFSET)
        consumer.subscribe(topic)
        await consumer.start(nursery)
        deadline = time.perf_counter() + limit
        while received < expected and time.perf_counter() < deadline:
            msgs = await consumer.poll(1.0)
            if msgs and first is None:
                first = time.perf_counter() - 1e-6
            received += len(msgs)
        elapsed = time.perf_counter() - (first or time.perf_counter())
        await consumer.shutdown()
        nursery.cancel_scope.cancel()
    return {"consumed": received, "expected": expected, "seconds": elapsed,
            "consume_tps": received / elapsed if elapsed > 0 else 0.0}


async def run(namesrv: str, topic: str, seconds: float, size: int, concurrency: int, reps: int) -> None:
    body = b"x" * size
    sent = 1
    async with trio.open_nursery() as nursery:
        producer = AsyncProducer("rgbench_py_producer", namesrv, send_timeout=10.0, retry_times=0)
        await producer.start(nursery)
        await producer.send(Message(topic, body))  # route lookup (and topic creation) off the clock
        for _ in range(reps):
            result = await window(producer, topic, body, seconds, concurrency)
            sent += result["sent"]
            print(json.dumps(result), flush=True)
        await producer.shutdown()
        nursery.cancel_scope.cancel()
    for rep in range(reps):
        print(json.dumps(await consume_window(namesrv, topic, f"rgbench_py_consumer_{rep}", sent,
                                              seconds * reps + 30)), flush=True)


def main() -> None:
    namesrv, topic, seconds, size = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    concurrency = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    reps = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    try:
        trio.run(run, namesrv, topic, seconds, size, concurrency, reps)
    except Exception as e:  # noqa: BLE001 - reported to the harness as the reason
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)


if __name__ == "__main__":
    main()
