"""`python -m bench.flow_control [SECONDS]`: send latency p99 and refusal rate under a throttled disk.

The RocketMQ Java producer of bench/java (RmqBench: 16 threads of sync sends, 128-byte bodies, no
retries) against each system; a refused send (SYSTEM_BUSY) counts as failed. Refusal rate =
failed / (sent + failed); p99 is over the sends that succeeded.

The throttled disk is the gateway's `--store-write-delay-ms` (every store write blocks that long),
with `--os-page-cache-busy-timeout-ms` scaled down so the write delay crosses it: the same rule as
RocketMQ's 1000 ms over a disk 50x slower. Apache RocketMQ has no such switch and its CommitLog
writes go to mmapped page cache, which cannot be slowed without host-level I/O throttling, so its
throttled row is not measured; its unthrottled row is the reference. Results go to
bench/results/flow_control.json and are printed as a Markdown table.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

from bench import scenarios as sc
from bench.brokers import ROOT, BrokerError, Gateway, RocketMQBroker
from bench.scenarios import Unavailable

THROTTLED = ["--store-write-delay-ms", "20", "--os-page-cache-busy-timeout-ms", "10"]
NO_FLOW_CONTROL = ["--os-page-cache-busy-timeout-ms", "3600000", "--wait-time-mills-in-send-queue", "3600000"]
CASES = [("gateway", "page cache (no throttle)", []),
         ("gateway", "throttled disk: 20 ms per write, busy limit 10 ms", THROTTLED),
         ("gateway", "throttled disk: 20 ms per write, flow control off", THROTTLED[:2] + NO_FLOW_CONTROL),
         ("rocketmq", "page cache (no throttle)", None)]


def measure(system: str, args: list[str] | None, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"flow-{system}-") as work:
        s = Gateway(work, extra_args=args) if system == "gateway" else RocketMQBroker(work)
        with s:
            topic = sc.new_topic("flow")
            sc.rmq_produce(s.namesrv, topic, 1.0, threads=4)  # route and topic in place, JIT warm
            out = sc._java("rocketmq", sc.RMQ_BENCH, ["produce", s.namesrv, topic, str(seconds), "16", "128", "0", "1"],
                           seconds + 120)
    w = [json.loads(line) for line in out.splitlines() if line.startswith("{")][-1]
    attempts = w["sent"] + w["failed"]
    return {"ok/s": round(w["sent"] / w["seconds"], 1), "p99 ms": w["p99_ms"],
            "refused %": round(100.0 * w["failed"] / attempts, 1) if attempts else None, "sent": w["sent"],
            "failed": w["failed"]}


def main(argv: list[str]) -> int:
    seconds = float(argv[0]) if argv else 5.0
    rows = []
    for system, condition, args in CASES:
        try:
            row = measure(system, args, seconds)
        except (BrokerError, Unavailable, OSError) as exc:
            row = {"error": str(exc)[:300]}
        rows.append({"system": system, "condition": condition, **row})
        print(rows[-1], flush=True)
    rows.append({"system": "rocketmq", "condition": "throttled disk", "error": "not measured: no write-delay switch"})
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "flow_control.json"), "w") as f:
        json.dump({"seconds": seconds, "threads": 16, "body": 128, "rows": rows}, f, indent=1)
    print("| system | condition | ok sends/s | p99 ms (ok sends) | refused % |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['system']} | {r['condition']} | {r.get('ok/s', 'n/a')} | {r.get('p99 ms', 'n/a')} | "
              f"{r.get('refused %', 'n/a')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
