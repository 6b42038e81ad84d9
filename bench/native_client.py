"""Native send TPS with the project's own Python RocketMQ client (client/), run as its own process:
    python -m bench.native_client NAMESRV TOPIC SECONDS BODY_BYTES [CONCURRENCY [REPS]]
prints one JSON line per window. The same method as RmqBench: concurrent synchronous sends for a
fixed time, after a first send that resolves the route."""
from __future__ import annotations

import json
import sys
import time

import trio

from client import AsyncProducer, Message, SendStatus


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


async def run(namesrv: str, topic: str, seconds: float, size: int, concurrency: int, reps: int) -> None:
    body = b"x" * size
    async with trio.open_nursery() as nursery:
        producer = AsyncProducer("rgbench_py_producer", namesrv, send_timeout=10.0, retry_times=0)
        await producer.start(nursery)
        await producer.send(Message(topic, body))  # route lookup (and topic creation) off the clock
        for _ in range(reps):
            print(json.dumps(await window(producer, topic, body, seconds, concurrency)), flush=True)
        await producer.shutdown()
        nursery.cancel_scope.cancel()


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
