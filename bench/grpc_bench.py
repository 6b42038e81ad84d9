"""`make grpc-bench`: send and receive TPS and send latency of the Java gRPC SDK
(compat/java/rocketmqgrpc, GrpcBench) against the gateway's --grpc-port and against Apache
RocketMQ 5.5's proxy (local mode, bench/grpc_proxy.py) on this machine; writes
docs/grpc-benchmark.md. Options: --messages N --body-bytes B --threads T --only gateway|proxy."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time

from bench.brokers import Gateway, free_port
from bench.grpc_proxy import RealProxy
from compat.jvm import java_command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORT = os.path.join(ROOT, "docs", "grpc-benchmark.md")


def run_bench(endpoints: str, topic: str, args, log_dir: str) -> dict:
    os.makedirs(log_dir, exist_ok=True)
    cmd = java_command("rocketmqgrpc", "compat.GrpcBench",
                       [endpoints, topic, topic + "-g", str(args.messages), str(args.body_bytes), str(args.threads)], log_dir)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=log_dir)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"GrpcBench printed no result:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")


def gateway_run(work: str, args) -> dict:
    port = free_port()
    gw = Gateway(os.path.join(work, "gateway"), extra_args=["--grpc-port", str(port)])
    with gw:
        return run_bench(f"127.0.0.1:{port}", "bench-grpc", args, os.path.join(work, "gateway-logs"))


def proxy_run(work: str, args) -> dict:
    proxy = RealProxy(os.path.join(work, "proxy")).start()
    try:
        proxy.create_topics({"bench-grpc": "NORMAL"})
        return run_bench(proxy.endpoints, "bench-grpc", args, os.path.join(work, "proxy-logs"))
    finally:
        proxy.stop()


def report(results: dict, args) -> str:
    lines = ["# gRPC benchmark (Java rocketmq-client-java 5.1.0, `make grpc-bench`)", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.messages} messages of "
             f"{args.body_bytes} bytes, {args.threads} sending threads (synchronous sends), then one "
             "SimpleConsumer receiving batches of 32 and acknowledging asynchronously. Same machine "
             "(2 cores, shared with other work, so figures vary between runs) for the server and the client; "
             "async flush on both.", "",
             "| server | send TPS | send p50 ms | send p99 ms | receive TPS | received | send failures |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['send_tps']:.0f} | {r['send_p50_ms']:.2f} | {r['send_p99_ms']:.2f} | "
                     f"{r['receive_tps']:.0f} | {r['received']} | {r['send_failed']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.grpc_bench")
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--body-bytes", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--only", choices=["gateway", "proxy"])
    args = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="grpc-bench-") as work:
        if args.only in (None, "gateway"):
            results["rocketgate --grpc-port"] = gateway_run(work, args)
        if args.only in (None, "proxy"):
            results["Apache RocketMQ 5.5 proxy (local mode)"] = proxy_run(work, args)
    text = report(results, args)
    with open(REPORT, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
