"""POP consumption benchmark with the native SimpleConsumer, standalone:
    python -m bench.pop_bench [--namesrv HOST:PORT] [--messages N] [--consumers C] [--body BYTES]
Without --namesrv it starts a gateway (tests/gateway_process.py) in a temp dir. Prints JSON lines:
- "pop": N messages produced, then C concurrent receive/ack loops (invisible 30 s) until all are
  acknowledged: consume TPS (acked messages per second) and ack latency p50/p99 (ms, one ACK_MESSAGE
  round trip each, the acks of one answer concurrently);
- "redelivery": messages received with a 1 s invisible time and not acknowledged, received again by
  a long-polling consumer (which does not stop to ack): lateness of each redelivery after its deadline, p50/p99/max (ms).

    python -m bench.pop_bench --java N [--rounds R] [--trees DIR,DIR] [--profile FILE]
The stock Java push consumer in POP mode (bench.share_bench.pop_run: a fresh 4-queue topic of N
messages per round) against Apache RocketMQ 5.5, systems alternating per round (round 0 warms up);
prints each round, then medians (min-max), the per-round ratios and the gateway's CPU seconds per
10 000 messages (its producing included; steadier than messages per second on a loaded machine).
`--trees` runs one gateway per checkout (e.g. before,after) in the same rotation; `--profile FILE`
runs the (first) gateway under cProfile and writes its stats to FILE when it stops.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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


class _ProfiledGateway:
    """bench.brokers.Gateway run as `python -m cProfile -o FILE -m gateway ...` (stats written at SIGTERM)."""

    def __new__(cls, workdir: str, out: str, tree: str):
        from bench.brokers import Gateway

        class Profiled(Gateway):
            def _spawn(self, name, cmd, env=None, cwd=None):
                i = cmd.index("-m")
                return super()._spawn(name, [*cmd[:i], "-m", "cProfile", "-o", os.path.abspath(out), *cmd[i:]],
                                      env=env, cwd=cwd)
        return Profiled(workdir, tree=tree)


def java_rounds(messages: int, rounds: int, trees: list[str], profile: str | None) -> dict:
    """{system: [(msg/s, gateway CPU s per 10 000 messages or None), ...]} over `rounds` counted rounds."""
    from bench.brokers import Gateway, RocketMQBroker
    from bench.procstat import cpu_used, thread_cpu_ns
    from bench.share_bench import pop_classpath, pop_run
    work = tempfile.mkdtemp(prefix="pop-java-bench-")
    systems = {}
    for i, tree in enumerate(trees):
        name = "gateway" if len(trees) == 1 else f"gateway:{os.path.basename(tree.rstrip('/'))}"
        workdir = os.path.join(work, f"gateway{i}")
        systems[name] = _ProfiledGateway(workdir, profile, tree) if profile and i == 0 else Gateway(workdir, tree=tree)
    systems["rocketmq"] = RocketMQBroker(os.path.join(work, "rocketmq"))
    out = {name: [] for name in systems}
    try:
        for s in systems.values():
            s.start()
        cp, logs = pop_classpath(work), os.path.join(work, "pop-logs")
        os.makedirs(logs, exist_ok=True)
        for r in range(rounds + 1):
            names = list(systems) if r % 2 == 0 else list(reversed(systems))
            for name in names:
                system = systems[name]
                pid = None if name == "rocketmq" else system.processes[0].pid
                before = thread_cpu_ns(pid) if pid else {}
                try:
                    rate = pop_run(cp, system.namesrv, messages, logs)
                except Exception as exc:  # noqa: BLE001 - reported, the others go on
                    print(f"  round {r} [{name}]: failed: {exc}", flush=True)
                    continue
                cpu = cpu_used(before, thread_cpu_ns(pid)) * 10_000 / messages if pid else None
                print(f"  round {r} [{name}]: {rate:,.0f} msg/s" + (f", {cpu:.2f} CPU s/10k" if cpu else ""),
                      flush=True)
                if r:
                    out[name].append((rate, cpu))
    finally:
        for s in systems.values():
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
    return out


def java_summary(results: dict) -> dict:
    def spread(values):
        return f"{statistics.median(values):,.2f} ({min(values):,.2f}-{max(values):,.2f})" if values else "n/a"
    ref = [rate for rate, _ in results["rocketmq"]]
    doc = {}
    for name, runs in results.items():
        rates = [rate for rate, _ in runs]
        doc[name] = {"msg_per_s": spread(rates)}
        if name != "rocketmq":
            doc[name]["cpu_s_per_10k"] = spread([cpu for _, cpu in runs if cpu])
            doc[name]["ratio_to_rocketmq"] = spread([g / k for g, k in zip(rates, ref)])
    return doc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--namesrv")
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--body", type=int, default=128)
    ap.add_argument("--redeliveries", type=int, default=200)
    ap.add_argument("--java", type=int, default=0, help="messages per round of the Java POP comparison (0: native bench)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trees", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--profile")
    args = ap.parse_args()
    if args.java:
        results = java_rounds(args.java, args.rounds, args.trees.split(","), args.profile)
        print(json.dumps({"bench": "pop-java", "messages": args.java, "rounds": args.rounds, "load": os.getloadavg(),
                          **java_summary(results)}), flush=True)
        return
    gateway = None
    if args.namesrv is None:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
        from gateway_process import GatewayProcess
        scratch = tempfile.mkdtemp(prefix="pop-bench-")
        gateway = GatewayProcess(os.path.join(scratch, "data")).start()
        args.namesrv = gateway.namesrv
    try:
        trio.run(produce, args.namesrv, "PopBench", args.messages, b"x" * args.body)
        print(json.dumps(trio.run(consume, args.namesrv, "PopBench", args.messages, args.consumers)), flush=True)
        trio.run(produce, args.namesrv, "PopBenchRedo", args.redeliveries, b"x" * args.body)
        print(json.dumps(trio.run(redelivery, args.namesrv, "PopBenchRedo", args.redeliveries)), flush=True)
    finally:
        if gateway is not None:
            gateway.stop()
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
