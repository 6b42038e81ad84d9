"""`python -m bench.flow_control [SECONDS [CONDITION...]]` (`make bench-flow-control`; CONDITIONs: run
only the rows whose "system condition" contains one of them, e.g. "gateway throttled disk 0.5"): send latency p99 and
refusal rate under a throttled disk, the gateway beside Apache RocketMQ.

The RocketMQ Java producer of bench/java (RmqBench: 16 threads of sync sends, 1 KiB bodies, no
retries) against each system; a refused send (SYSTEM_BUSY) counts as failed. Refusal rate =
failed / (sent + failed); p99 is over the sends that succeeded; ok MB/s = succeeded sends x body.

The throttled disk (bench/throttled_disk.py): each system's store on a fresh ext4 loop device whose
writes the kernel holds to a byte rate (cgroup v1 blkio throttle) with a small dirty page cache
limit, so both brokers block in the kernel the way a slow disk blocks them, with their default flow
control thresholds (osPageCacheBusyTimeOutMills 1000 ms, waitTimeMillsInSendQueue 200 ms). Where
that cannot be made (no root, no cgroup v1 blkio), those rows say why and only the fallback rows run:
the gateway's hidden `--store-write-delay-ms` (every store write sleeps 20 ms, busy limit scaled to
10 ms), which RocketMQ has no equivalent of. Results go to bench/results/flow_control.json and are
printed as a Markdown table (docs/performance.md, "Flow control under a throttled disk").
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile

from bench import scenarios as sc
from bench.brokers import ROOT, BrokerError, Gateway, RocketMQBroker
from bench.scenarios import Unavailable
from bench.throttled_disk import measure_write_rate, throttled_disk, why_unavailable

BODY = 1024
MB = 1 << 20
DELAYED = ["--store-write-delay-ms", "20", "--os-page-cache-busy-timeout-ms", "10"]
NO_FLOW_CONTROL = ["--os-page-cache-busy-timeout-ms", "3600000", "--wait-time-mills-in-send-queue", "3600000"]
# (system, condition, gateway args, throttled disk's write bytes/s or None: the page cache of /tmp)
CASES = [("gateway", "page cache (no throttle)", [], None),
         ("rocketmq", "page cache (no throttle)", None, None),
         ("gateway", "throttled disk 2 MiB/s, default flow control", [], 2 * MB),
         ("rocketmq", "throttled disk 2 MiB/s, default flow control", None, 2 * MB),
         ("gateway", "throttled disk 2 MiB/s, flow control off", NO_FLOW_CONTROL, 2 * MB),
         ("gateway", "throttled disk 0.5 MiB/s, default flow control", [], MB // 2),
         ("rocketmq", "throttled disk 0.5 MiB/s, default flow control", None, MB // 2),
         ("gateway", "fallback shim: 20 ms per store write, busy limit 10 ms", DELAYED, None),
         ("gateway", "fallback shim: 20 ms per store write, flow control off", DELAYED[:2] + NO_FLOW_CONTROL, None)]
_REFUSED = re.compile(r"refused so far: (\{[^}]*\})")


def _refusal_kinds(system, workdir: str) -> str:
    """Which SYSTEM_BUSY remarks the broker gave: the gateway's flow-control log line counts them;
    RocketMQ's logs are searched for the two remarks."""
    counts: dict[str, int] = {}
    for folder, _dirs, files in os.walk(workdir):
        for name in files:
            if not name.endswith(".log"):
                continue
            try:
                text = open(os.path.join(folder, name), errors="replace").read()
            except OSError:
                continue
            if system == "gateway":
                found = _REFUSED.findall(text)
                if found:
                    counts.update(json.loads(found[-1].replace("'", '"')))
            else:
                for kind in ("PC_SYNCHRONIZED", "TIMEOUT_CLEAN_QUEUE"):
                    counts[kind] = counts.get(kind, 0) + text.count(kind)
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"


def measure(system: str, args: list[str] | None, seconds: float, base: str) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"flow-{system}-", dir=base) as work:
        disk_mbs = measure_write_rate(work)
        s = Gateway(work, extra_args=args) if system == "gateway" else RocketMQBroker(work)
        with s:
            topic = sc.new_topic("flow")
            _warm_up(s.namesrv, topic)
            out = sc._java("rocketmq", sc.RMQ_BENCH, ["produce", s.namesrv, topic, str(seconds), "16", str(BODY),
                                                      "0", "1"], seconds + 180)
            peak_mib = s.peak_memory / (1 << 20)
        kinds = _refusal_kinds(system, work)
    w = [json.loads(line) for line in out.splitlines() if line.startswith("{")][-1]
    attempts = w["sent"] + w["failed"]
    return {"ok/s": round(w["sent"] / w["seconds"], 1), "ok MB/s": round(w["sent"] * BODY / 1e6 / w["seconds"], 2),
            "disk MB/s": round(disk_mbs, 1), "p99 ms": w["p99_ms"],
            "refused %": round(100.0 * w["failed"] / attempts, 1) if attempts else None, "sent": w["sent"],
            "failed": w["failed"], "refusals": kinds, "peak MiB": round(peak_mib)}


def _warm_up(namesrv: str, topic: str, tries: int = 4) -> None:
    """Route and topic in place, JIT warm. On a loaded machine a JVM's first route lookups (3 s
    timeout each) can all time out; RmqBench's first send then throws and its JVM, whose client
    threads are not daemons, hangs until killed: so each try is bounded and the warm-up tried again."""
    for attempt in range(tries):
        try:
            sc._java("rocketmq", sc.RMQ_BENCH, ["produce", namesrv, topic, "1", "4", "128", "0", "1"], 90)
            return
        except Unavailable:
            if attempt == tries - 1:
                raise


def run_case(system: str, args, throttle_bps: int | None, seconds: float) -> dict:
    if not throttle_bps:
        return measure(system, args, seconds, tempfile.gettempdir())
    with throttled_disk(throttle_bps) as mnt:
        return measure(system, args, seconds, mnt)


def main(argv: list[str]) -> int:
    seconds = float(argv[0]) if argv else 20.0
    wanted = argv[1:]
    rows = []
    for system, condition, args, throttled in CASES:
        if wanted and not any(w in f"{system} {condition}" for w in wanted):
            continue
        try:
            row = run_case(system, args, throttled, seconds)
        except (BrokerError, Unavailable, OSError, IndexError) as exc:
            row = {"error": str(exc)[:300]}
        rows.append({"system": system, "condition": condition, **row})
        print(rows[-1], flush=True)
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "flow_control.json"), "w") as f:
        json.dump({"seconds": seconds, "threads": 16, "body": BODY,
                   "throttled_disk": why_unavailable() or "loop device, cgroup v1 blkio throttle", "rows": rows},
                  f, indent=1)
    print(f"{seconds:.0f} s per row, 16 threads of sync sends, {BODY} B bodies\n")
    print("| system | condition | disk MB/s (probe) | ok sends/s | ok MB/s | p99 ms (ok sends) | refused % "
          "| SYSTEM_BUSY remarks | peak MiB |\n|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [r.get(k, "n/a") for k in ("disk MB/s", "ok/s", "ok MB/s", "p99 ms", "refused %", "refusals", "peak MiB")]
        if "error" in r:
            cells[-2] = f"n/a ({r['error'][:120]})"
        print(f"| {r['system']} | {r['condition']} | " + " | ".join(str(c) for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
