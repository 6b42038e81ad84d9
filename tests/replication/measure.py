"""Replication figures (not a test; run by hand, output recorded in docs/replication-figures.md):
    python tests/replication/measure.py
Produce latency (one 100-byte record per request, one client, sequential) with acks=1 and acks=all
on a queue replicated to one follower, and on an unreplicated queue; the rate at which a follower
that was stopped catches up."""
from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/ (gateway_process)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # this tree

from gateway_process import GatewayProcess  # noqa: E402
from replicas import Kafka, batch, follow, replicate, state, wait_until  # noqa: E402

N = 2000
CATCH_UP_RECORDS = 200_000


def _latencies(k: Kafka, topic: str, acks: int) -> tuple[float, float]:
    lat = []
    value = b"x" * 100
    for _ in range(N):
        began = time.perf_counter()
        code, _ = k.produce(topic, batch([value]), acks=acks)
        lat.append(time.perf_counter() - began)
        assert code == 0
    lat.sort()
    return lat[N // 2] * 1000, lat[int(N * 0.99)] * 1000


def main() -> None:
    root = tempfile.mkdtemp(prefix="repl-measure-")
    args = ["--replica-lag-time-max-ms", "10000", "--default-partitions", "1"]
    leader = GatewayProcess(os.path.join(root, "a"), extra_args=args).start()
    follower = GatewayProcess(os.path.join(root, "b"), extra_args=args).start()
    try:
        replicate(leader, [follower], "replicated", 1)
        k = Kafka(leader)
        k.produce("plain", batch([b"warm"]), acks=1)
        k.produce("replicated", batch([b"warm"]), acks=-1)
        print(f"{N} sequential produces of one 100-byte record, p50 / p99 ms:")
        for topic, acks in (("plain", 1), ("plain", -1), ("replicated", 1), ("replicated", -1)):
            p50, p99 = _latencies(k, topic, acks)
            print(f"  {topic:10s} acks={'all' if acks == -1 else acks:3}: {p50:6.2f} / {p99:6.2f}")
        follower.stop()
        per_batch = 100
        for i in range(CATCH_UP_RECORDS // per_batch):
            k.produce("replicated", batch([b"y" * 100] * per_batch), acks=1)
        end = state(leader, "replicated")["logEnd"]
        follower.start()
        began = time.monotonic()
        follow(follower, leader, "replicated", 1)
        wait_until(lambda: state(follower, "replicated")["logEnd"] == end, timeout=600, what="catch-up")
        took = time.monotonic() - began
        mb = len(batch([b"y" * 100] * per_batch)) * (CATCH_UP_RECORDS // per_batch) / 1e6
        print(f"catch-up: {CATCH_UP_RECORDS} records ({CATCH_UP_RECORDS // per_batch} batches, ~{mb:.1f} MB of "
              f"record batches) in {took:.2f} s = {CATCH_UP_RECORDS / took:,.0f} records/s, {mb / took:.1f} MB/s")
    finally:
        leader.stop()
        follower.stop()


if __name__ == "__main__":
    main()
